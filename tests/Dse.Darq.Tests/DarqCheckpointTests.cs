using System.Text;

namespace Dse.Darq.Tests;

/// <summary>Checkpoints: a snapshot replaces SELF messages atomically, under the processor's incarnation.</summary>
public sealed class DarqCheckpointTests
{
    /// <summary>A delta-log processor: each IN message "n" becomes a SELF delta "n"; the snapshot is their sum.</summary>
    private static async Task<List<long>> StepDeltasAsync(Darq darq, DarqProcessor processor, params int[] values)
    {
        var deltas = new List<long>();
        foreach (int value in values)
        {
            var sent = await darq.EnqueueAsync(value.ToString(System.Globalization.CultureInfo.InvariantCulture).Bytes());
            var result = await processor.StepAsync(new DarqStep().Consume(sent.Lsn).AddSelf($"{value}".Bytes()));
            deltas.Add(result.SelfLsns[0]);
        }

        return deltas;
    }

    private static IReadOnlyList<ReadOnlyMemory<byte>> Sum(IReadOnlyList<DarqMessage> messages)
    {
        int sum = 0;
        foreach (var message in messages)
        {
            sum += int.Parse(message.Text().TrimStart('='), System.Globalization.CultureInfo.InvariantCulture);
        }

        return [Encoding.UTF8.GetBytes($"={sum}")];
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task CheckpointAsync_ThenReopen_ReplaysOnlyTheSnapshotThenIn()
    {
        var storage = new DarqTestStorage();
        long snapshotLsn;
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            var deltas = await StepDeltasAsync(darq, processor, 1, 2, 3, 4);
            IReadOnlyList<DarqMessage>? seen = null;
            var checkpoint = await processor.CheckpointAsync(messages =>
            {
                seen = messages;
                return Sum(messages);
            });
            Assert.Equal(deltas, seen!.Select(m => m.Lsn));
            Assert.Equal(deltas, checkpoint.ReplacedLsns);
            snapshotLsn = Assert.Single(checkpoint.SelfLsns);
            await darq.EnqueueAsync("pending".Bytes());
            await darq.CommitAsync();
        }

        await using (var reopened = await storage.OpenAsync())
        {
            var processor = await reopened.RegisterProcessorAsync();
            var replay = processor.Drain();
            Assert.Equal([(snapshotLsn, DarqMessageKind.Self, "=10"), (replay[1].Lsn, DarqMessageKind.In, "pending")],
                replay.Select(m => (m.Lsn, m.Kind, m.Text())));

            // A second checkpoint compacts the first one's snapshot with later deltas.
            await StepDeltasAsync(reopened, processor, 5);
            var second = await processor.CheckpointAsync(Sum);
            Assert.Equal(2, second.ReplacedLsns.Count);
            await reopened.CommitAsync();
        }

        await using var again = await storage.OpenAsync();
        var last = await again.RegisterProcessorAsync();
        Assert.Equal(["=15", "pending"], last.Drain().Select(m => m.Text()));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task CheckpointAsync_ThenTruncate_DropsTheReplacedEntriesAndReopens()
    {
        var storage = new DarqTestStorage();
        DarqCheckpointResult checkpoint;
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            var deltas = await StepDeltasAsync(darq, processor, 1, 2, 3);

            // The oldest delta holds the log's begin until the checkpoint replaces it.
            Assert.Equal(deltas[0], await darq.TruncateAsync());
            checkpoint = await processor.CheckpointAsync(Sum);
            long begin = await darq.TruncateAsync();
            Assert.Equal(checkpoint.SelfLsns[0], begin);
            Assert.True(begin > deltas[^1]);

            // A replaced message is consumed: a step or another checkpoint naming it is refused.
            var again = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepAsync(new DarqStep().Consume(deltas[0])).AsTask());
            Assert.Equal(DarqStepRejection.AlreadyConsumed, again.Reason);
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(checkpoint.SelfLsns[0], reopened.BeginAddress);
        var recovered = await reopened.RegisterProcessorAsync();
        Assert.Equal([(checkpoint.SelfLsns[0], "=6")], recovered.Drain().Select(m => (m.Lsn, m.Text())));
    }

    [Fact]
    public async Task CheckpointAsync_StaleIncarnation_IsRefusedAndChangesNothing()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var old = await darq.RegisterProcessorAsync();
        await StepDeltasAsync(darq, old, 1, 2);
        var current = await darq.RegisterProcessorAsync();
        var selfLsns = current.Drain().Select(m => m.Lsn).ToList();
        long tail = darq.TailAddress;
        bool called = false;

        var stale = await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => old.CheckpointAsync(m =>
        {
            called = true;
            return Sum(m);
        }).AsTask());
        Assert.Contains("incarnation", stale.Message, StringComparison.OrdinalIgnoreCase);
        await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => old.CheckpointAsync(selfLsns, ["=3".Bytes()]).AsTask());

        Assert.False(called);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(2, darq.UnconsumedCount);
        Assert.Equal(2, (await current.CheckpointAsync(Sum)).ReplacedLsns.Count);
    }

    [Fact]
    public async Task CheckpointAsync_NamingAConsumedInOrUnknownMessage_IsRefusedAndChangesNothing()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        var deltas = await StepDeltasAsync(darq, processor, 1, 2);
        var consumed = (await processor.StepAsync(new DarqStep().Consume(deltas[0]).AddSelf("1".Bytes()))).SelfLsns[0];
        var inMessage = await darq.EnqueueAsync("in".Bytes());
        var activity = (await processor.StepAsync(new DarqStep().AddActivity("charge", "x".Bytes()))).SelfLsns[0];
        long tail = darq.TailAddress;
        int unconsumed = darq.UnconsumedCount;

        var cases = new (long Lsn, DarqStepRejection Reason)[]
        {
            (deltas[0], DarqStepRejection.AlreadyConsumed),
            (inMessage.Lsn, DarqStepRejection.NotReplaceable),
            (activity, DarqStepRejection.NotReplaceable),
            (tail + 4096, DarqStepRejection.UnknownMessage),
        };
        foreach (var (lsn, reason) in cases)
        {
            var refused = await Assert.ThrowsAsync<DarqStepRejectedException>(
                () => processor.CheckpointAsync([deltas[1], lsn], ["=3".Bytes()]).AsTask());
            Assert.Equal(lsn, refused.Lsn);
            Assert.Equal(reason, refused.Reason);
            Assert.Contains(lsn.ToString(System.Globalization.CultureInfo.InvariantCulture), refused.Message, StringComparison.Ordinal);
        }

        var twice = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.CheckpointAsync([consumed, consumed], []).AsTask());
        Assert.Equal(DarqStepRejection.ConsumedTwiceInStep, twice.Reason);
        await Assert.ThrowsAsync<ArgumentException>(() => processor.CheckpointAsync([], ["=3".Bytes()]).AsTask());

        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(unconsumed, darq.UnconsumedCount);

        // The valid subset goes through; the activity and the IN message are untouched.
        var checkpoint = await processor.CheckpointAsync([deltas[1], consumed], ["=3".Bytes()]);
        Assert.Equal([deltas[1], consumed], checkpoint.ReplacedLsns);
        Assert.Equal(unconsumed - 1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task CheckpointAsync_SnapshotThrowsOrIsTooLarge_ChangesNothing()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        await StepDeltasAsync(darq, processor, 1, 2);
        long tail = darq.TailAddress;

        await Assert.ThrowsAsync<FormatException>(() => processor.CheckpointAsync(_ => throw new FormatException("bad state")).AsTask());
        var tooLarge = await Assert.ThrowsAsync<ArgumentException>(
            () => processor.CheckpointAsync(_ => [new byte[darq.MaxMessageSize + 1]]).AsTask());
        Assert.Contains("MaxMessageSize", tooLarge.Message, StringComparison.Ordinal);

        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(2, darq.UnconsumedCount);
    }

    [Fact]
    public async Task CheckpointAsync_NothingToCompact_AppendsNothing()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        await processor.StepAsync(new DarqStep().AddActivity("charge", "x".Bytes()));
        long tail = darq.TailAddress;

        var result = await processor.CheckpointAsync(_ => throw new InvalidOperationException("must not be called"));

        Assert.Empty(result.ReplacedLsns);
        Assert.Equal(-1, result.CheckpointLsn);
        Assert.Equal(tail, darq.TailAddress);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task CheckpointAsync_CrashBeforeItsCommit_RecoversAllOldSelfMessages()
    {
        var storage = new DarqTestStorage();
        List<long> deltas;
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            deltas = await StepDeltasAsync(darq, processor, 1, 2, 3);
            await darq.CommitAsync();
            await processor.CheckpointAsync(Sum);

            // Nothing of the checkpoint reaches storage: all or nothing means nothing.
            storage.CrashNow();
        }

        await using (var reopened = await storage.OpenAsync())
        {
            var processor = await reopened.RegisterProcessorAsync();
            Assert.Equal(deltas.Zip(["1", "2", "3"]), processor.Drain().Select(m => (m.Lsn, m.Text())));

            // Checkpoint again, committed this time, then crash after the commit.
            await processor.CheckpointAsync(Sum);
            await reopened.CommitAsync();
            storage.CrashNow();
        }

        await using var again = await storage.OpenAsync();
        var last = await again.RegisterProcessorAsync();
        Assert.Equal(["=6"], last.Drain().Select(m => m.Text()));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task CheckpointAsync_WithActivityAndOutPending_KeepsThemAndReopens()
    {
        var storage = new DarqTestStorage();
        long activity, outLsn;
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            await StepDeltasAsync(darq, processor, 1);
            var mixed = await processor.StepAsync(new DarqStep().AddSelf("2".Bytes()).AddActivity("charge", "x".Bytes()).AddOut("elsewhere", "o".Bytes()));
            (activity, outLsn) = (mixed.SelfLsns[1], mixed.OutLsns[0]);
            await StepDeltasAsync(darq, processor, 3);

            var checkpoint = await processor.CheckpointAsync(Sum);
            Assert.Equal(3, checkpoint.ReplacedLsns.Count);
            Assert.DoesNotContain(activity, checkpoint.ReplacedLsns);

            // The pending OUT's step (with the activity) holds the begin address.
            Assert.Equal(mixed.SelfLsns[0], await darq.TruncateAsync());
        }

        await using var reopened = await storage.OpenAsync();
        var recovered = await reopened.RegisterProcessorAsync();
        var replay = recovered.Drain();
        Assert.Equal([(activity, DarqMessageKind.Activity), (replay[1].Lsn, DarqMessageKind.Self)], replay.Select(m => (m.Lsn, m.Kind)));
        Assert.Equal("=6", replay[1].Text());
        Assert.Equal(1, reopened.PendingOutCount);
        Assert.Equal("charge", DarqActivity.FromMessage(replay[0], reopened.Name).Name);
        var notSelf = await Assert.ThrowsAsync<DarqStepRejectedException>(() => recovered.CheckpointAsync([outLsn], []).AsTask());
        Assert.Equal(DarqStepRejection.NotReplaceable, notSelf.Reason);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task EnableAutoCheckpoint_EveryThreeSteps_CompactsAndReplaysTheSnapshot()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            processor.EnableAutoCheckpoint(3, Sum);
            var deltas = await StepDeltasAsync(darq, processor, 1, 2, 3);
            Assert.Equal(deltas, processor.LastAutoCheckpoint!.ReplacedLsns);
            await StepDeltasAsync(darq, processor, 4, 5, 6, 7);

            Assert.Equal(4, processor.LastAutoCheckpoint!.ReplacedLsns.Count); // "=6", 4, 5, 6
            Assert.Equal(2, darq.UnconsumedCount); // "=21" and 7
            await darq.CommitAsync();
        }

        await using var reopened = await storage.OpenAsync();
        var recovered = await reopened.RegisterProcessorAsync();
        Assert.Equal(["=21", "7"], recovered.Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task EnableAutoCheckpoint_SnapshotThrows_StepStillSucceedsAndNothingIsCompacted()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        processor.EnableAutoCheckpoint(1, _ => throw new FormatException("bad state"));

        var deltas = await StepDeltasAsync(darq, processor, 1, 2);

        Assert.Equal(2, deltas.Count);
        Assert.Null(processor.LastAutoCheckpoint);
        Assert.Equal(2, darq.UnconsumedCount);
        processor.DisableAutoCheckpoint();
        Assert.Throws<ArgumentOutOfRangeException>(() => processor.EnableAutoCheckpoint(0, Sum));
    }

    [Theory]
    [Trait("Category", "Recovery")]
    [InlineData("in")]
    [InlineData("activity")]
    public async Task Reopen_CheckpointRecordReplacingANonSelfMessage_IsCorruptNamingTheAddress(string target)
    {
        var storage = new DarqTestStorage();
        long record, forgedLsn, incarnation;
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            incarnation = processor.Incarnation;
            var inMessage = await darq.EnqueueAsync("in".Bytes());
            long activity = (await processor.StepAsync(new DarqStep().AddActivity("charge", "x".Bytes()))).SelfLsns[0];
            await StepDeltasAsync(darq, processor, 1);
            forgedLsn = target == "in" ? inMessage.Lsn : activity;
            record = (await processor.CheckpointAsync(Sum)).CheckpointLsn;
        }

        // A well-formed, correctly sealed record (same length and sequence) that replaces a message no checkpoint may.
        var header = new byte[DarqEntryFormat.HeaderSize];
        long entryAddress = record + DarqEntryFormat.FasterHeaderSize;
        Assert.True(storage.Log.TryRead((int)(entryAddress / DarqTestStorage.SegmentSize), entryAddress % DarqTestStorage.SegmentSize, header));
        long sequence = System.Buffers.Binary.BinaryPrimitives.ReadInt64LittleEndian(header.AsSpan(8));
        var forged = DarqEntryFormat.Checkpoint(sequence, incarnation, 1, [forgedLsn]);
        storage.Log.Write((int)(entryAddress / DarqTestStorage.SegmentSize), entryAddress % DarqTestStorage.SegmentSize, forged);

        var error = await Assert.ThrowsAsync<InvalidDataException>(() => storage.OpenAsync());
        Assert.Contains($"at address {record}", error.Message, StringComparison.Ordinal);
        Assert.Contains($"replaces LSN {forgedLsn}", error.Message, StringComparison.Ordinal);
    }
}
