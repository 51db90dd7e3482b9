using Dse.Storage;

namespace Dse.Darq.Tests;

/// <summary>
/// Batched steps (<see cref="Darq.StepBatchAsync"/>): several steps validated in order under one gate acquisition and
/// appended as few FasterLog batches as fit on a page. A batch must leave the log, the state and the recovered state
/// exactly as the same steps stepped one by one, and is refused whole.
/// </summary>
public sealed class DarqStepBatchTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task StepBatch_SmallSteps_SameLogStateAndRecoveryAsOneByOne()
    {
        var single = await RunAsync(batched: false, outBytes: 16);
        var batch = await RunAsync(batched: true, outBytes: 16);

        Assert.Equal(single.Results, batch.Results);
        Assert.Equal(single.Tail, batch.Tail);
        Assert.True(single.Log.AsSpan().SequenceEqual(batch.Log), "the two runs' logs differ");
        Assert.Equal(single.Replay, batch.Replay);
        Assert.Equal(single.PendingOut, batch.PendingOut);
    }

    [Fact]
    public async Task StepBatch_CrossingPageBoundaries_SameLogStateAndRecoveryAsOneByOne()
    {
        // 40 steps with a 6 KB OUT each: about 240 KB, so the batch spans four 64 KB pages and is split at each.
        var single = await RunAsync(batched: false, outBytes: 6 * 1024);
        var batch = await RunAsync(batched: true, outBytes: 6 * 1024);

        Assert.True(batch.Tail > 3 * DarqTestStorage.PageSize, $"the batch should cross pages, tail {batch.Tail}");
        Assert.Equal(single.Results, batch.Results);
        Assert.Equal(single.Tail, batch.Tail);
        Assert.True(single.Log.AsSpan().SequenceEqual(batch.Log), "the two runs' logs differ");
        Assert.Equal(single.Replay, batch.Replay);
        Assert.Equal(single.PendingOut, batch.PendingOut);
    }

    [Fact]
    public async Task StepBatch_LaterStepConsumesWhatEarlierConsumed_RefusesWholeBatch()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var b = await darq.EnqueueAsync("b".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        long tail = darq.TailAddress;

        var error = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepBatchAsync(
        [
            new DarqStep().Consume(a.Lsn).AddOut("x", "1".Bytes()),
            new DarqStep().Consume(b.Lsn).AddSelf("s".Bytes()),
            new DarqStep().Consume(a.Lsn),
        ]).AsTask());

        Assert.Equal(DarqStepRejection.AlreadyConsumed, error.Reason);
        Assert.Equal(a.Lsn, error.Lsn);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(2, darq.UnconsumedCount);
        Assert.Equal(0, darq.PendingOutCount);

        // Nothing of it applied, and the gate is free: the valid steps go through as a batch.
        var results = await processor.StepBatchAsync([new DarqStep().Consume(a.Lsn), new DarqStep().Consume(b.Lsn)]);
        Assert.Equal(2, results.Count);
        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task StepBatch_OutOfLsnOrder_AcceptsDistinctAndRefusesARepeatBelowTheHighest()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var b = await darq.EnqueueAsync("b".Bytes());
        var c = await darq.EnqueueAsync("c".Bytes());
        var d = await darq.EnqueueAsync("d".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        long tail = darq.TailAddress;

        // A step that takes a higher LSN with a repeated lower one (the repeat is found once the order breaks).
        var error = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepBatchAsync(
        [
            new DarqStep().Consume(b.Lsn),
            new DarqStep().Consume(c.Lsn),
            new DarqStep().Consume(d.Lsn).Consume(b.Lsn),
        ]).AsTask());
        Assert.Equal(DarqStepRejection.AlreadyConsumed, error.Reason);
        Assert.Equal(b.Lsn, error.Lsn);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(4, darq.UnconsumedCount);

        // Going back below the highest without a repeat is allowed.
        var results = await processor.StepBatchAsync(
        [
            new DarqStep().Consume(c.Lsn),
            new DarqStep().Consume(a.Lsn),
            new DarqStep().Consume(d.Lsn),
            new DarqStep().Consume(b.Lsn),
        ]);
        Assert.Equal(4, results.Count);
        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task StepBatch_UnknownLsnOrTwiceInOneStep_RefusesWholeBatchWithTheReason()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        long tail = darq.TailAddress;

        var unknown = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepBatchAsync(
            [new DarqStep().AddSelf("s".Bytes()), new DarqStep().Consume(a.Lsn + 1)]).AsTask());
        var twice = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepBatchAsync(
            [new DarqStep().Consume(a.Lsn).Consume(a.Lsn)]).AsTask());

        Assert.Equal(DarqStepRejection.UnknownMessage, unknown.Reason);
        Assert.Equal(DarqStepRejection.ConsumedTwiceInStep, twice.Reason);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task StepBatch_BadShape_ThrowsNamingTheStepAndAppendsNothing()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        long tail = darq.TailAddress;
        var tooLarge = new byte[darq.MaxMessageSize + 1];

        var empty = Assert.Throws<ArgumentException>(() => processor.StepBatchAsync([]));
        var emptyStep = Assert.Throws<ArgumentException>(() => processor.StepBatchAsync([new DarqStep().Consume(a.Lsn), new DarqStep()]));
        var large = Assert.Throws<ArgumentException>(() => processor.StepBatchAsync([new DarqStep().AddOut("x", tooLarge)]));
        var nullStep = Assert.Throws<ArgumentException>(() => processor.StepBatchAsync([new DarqStep().Consume(a.Lsn), null!]));

        Assert.Equal("steps", empty.ParamName);
        Assert.Contains("Step 1 of the batch", emptyStep.Message, StringComparison.Ordinal);
        Assert.Contains("at least one message", emptyStep.Message, StringComparison.Ordinal);
        Assert.Contains("Step 0 of the batch", large.Message, StringComparison.Ordinal);
        Assert.Contains("MaxMessageSize", large.Message, StringComparison.Ordinal);
        Assert.Contains("Step 1 of the batch is null", nullStep.Message, StringComparison.Ordinal);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task StepBatch_StaleIncarnation_RefusedAndNothingAppended()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var old = await darq.RegisterProcessorAsync();
        var current = await darq.RegisterProcessorAsync();
        long tail = darq.TailAddress;

        var error = await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => old.StepBatchAsync([new DarqStep().Consume(a.Lsn)]).AsTask());

        Assert.Contains(old.Incarnation.ToString(System.Globalization.CultureInfo.InvariantCulture), error.Message, StringComparison.Ordinal);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);
        await current.StepBatchAsync([new DarqStep().Consume(a.Lsn)]);
        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Crash_BatchAppendedAcrossPagesNotCommitted_RecoveryHasNoneOfIt()
    {
        var storage = new DarqTestStorage();
        var payload = new byte[6 * 1024];
        long committedTail;
        List<long> lsns = [];
        await using (var darq = await storage.OpenAsync(o => o.MemorySize = 16 * DarqTestStorage.PageSize))
        {
            for (int i = 0; i < 40; i++)
            {
                lsns.Add((await darq.EnqueueAsync(BitConverter.GetBytes(i))).Lsn);
            }

            var processor = await darq.RegisterProcessorAsync();
            await darq.CommitAsync();
            committedTail = darq.TailAddress;

            // The batch spans pages (FasterLog may write the pages it fills to the device), but no commit covers it.
            var results = await processor.StepBatchAsync(lsns.Select(lsn => new DarqStep().Consume(lsn).AddOut("sink", payload)).ToList());
            Assert.True(results[^1].DurableAt - results[0].OutLsns[0] > 2 * DarqTestStorage.PageSize);
            storage.CrashNow();
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(committedTail, reopened.TailAddress);
        var recovered = await reopened.RegisterProcessorAsync();

        Assert.Equal(lsns, recovered.Drain().Select(m => m.Lsn));
        Assert.Equal(0, reopened.PendingOutCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Crash_AfterCommitOfBatchAcrossPages_RecoveryHasAllOfIt()
    {
        var storage = new DarqTestStorage();
        var payload = new byte[6 * 1024];
        List<long> lsns = [];
        await using (var darq = await storage.OpenAsync(o => o.MemorySize = 16 * DarqTestStorage.PageSize))
        {
            for (int i = 0; i < 40; i++)
            {
                lsns.Add((await darq.EnqueueAsync(BitConverter.GetBytes(i))).Lsn);
            }

            var processor = await darq.RegisterProcessorAsync();
            var steps = lsns.Select((lsn, i) => i % 2 == 0
                ? new DarqStep().Consume(lsn).AddOut("sink", payload)
                : new DarqStep().Consume(lsn).AddSelf(BitConverter.GetBytes(i))).ToList();
            await processor.StepBatchAsync(steps);
            await darq.CommitAsync();
            storage.CrashNow();

            // After the cut: lost, and must not disturb recovery of the committed batch.
            await processor.StepBatchAsync([new DarqStep().AddSelf("lost".Bytes())]);
        }

        await using var reopened = await storage.OpenAsync();
        var recovered = await reopened.RegisterProcessorAsync();
        var replay = recovered.Drain();

        Assert.Equal(Enumerable.Range(0, 40).Where(i => i % 2 == 1), replay.Select(m => BitConverter.ToInt32(m.Payload.Span)));
        Assert.All(replay, m => Assert.Equal(DarqMessageKind.Self, m.Kind));
        Assert.Equal(20, reopened.PendingOutCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Crash_CommitRequestedWhileBatchWaitsMidAppend_CommitCoversTheWholeBatch()
    {
        var logStorage = new InMemoryStorage();
        var commitStorage = new InMemoryStorage();
        var device = new HoldingDevice(DseDevices.CreateInMemory(logStorage));
        var commits = new FaultInjectingDevice(DseDevices.CreateInMemory(commitStorage));
        var options = DarqTestStorage.Options(device, commits);
        var payload = new byte[12 * 1024]; // 40 steps: 480 KB, more than the four pages of log memory
        List<long> lsns = [];
        await using (var darq = await Darq.OpenAsync(options))
        {
            for (int i = 0; i < 40; i++)
            {
                lsns.Add((await darq.EnqueueAsync(BitConverter.GetBytes(i))).Lsn);
            }

            var processor = await darq.RegisterProcessorAsync();
            await darq.CommitAsync();
            long before = darq.TailAddress;

            // With device writes held, the four pages of log memory fill up: the batch appends its first page-sized runs
            // and then waits for log memory, holding the gate, with part of it in the log.
            device.Hold();
            Task<IReadOnlyList<DarqStepResult>> batch;
            Task commit;
            try
            {
                batch = processor.StepBatchAsync(lsns.Select(lsn => new DarqStep().Consume(lsn).AddOut("sink", payload)).ToList()).AsTask();
                Assert.False(batch.IsCompleted, "the batch should wait for log memory");
                Assert.True(darq.TailAddress > before, "the batch should have appended its first runs before waiting");

                // A commit requested now waits for the gate, so it cannot cover half of the batch.
                commit = darq.CommitAsync().AsTask();
                Assert.False(commit.IsCompleted);
            }
            finally
            {
                device.Release();
            }

            var results = await batch.WaitAsync(HangGuard);
            await commit.WaitAsync(HangGuard);
            Assert.True(darq.CommittedUntilAddress >= results[^1].DurableAt, "the commit after the batch covers all of it");
            commits.CutNow();
        }

        await using var reopened = await Darq.OpenAsync(
            DarqTestStorage.Options(DseDevices.CreateInMemory(logStorage), DseDevices.CreateInMemory(commitStorage)));
        Assert.Equal(0, reopened.UnconsumedCount);
        Assert.Equal(40, reopened.PendingOutCount);
    }

    [Fact]
    public async Task StepBatch_Activities_FlaggedPerSelfEntryAndRecoveredAsActivities()
    {
        var storage = new DarqTestStorage();
        long[] selfLsns;
        await using (var darq = await storage.OpenAsync())
        {
            var a = await darq.EnqueueAsync("a".Bytes());
            var processor = await darq.RegisterProcessorAsync();
            var results = await processor.StepBatchAsync(
            [
                new DarqStep().Consume(a.Lsn).AddSelf("plain".Bytes()).AddActivity("charge", "1".Bytes()),
                new DarqStep().AddActivity("refund", "2".Bytes()).AddSelf("plain2".Bytes()),
            ]);
            selfLsns = [.. results[0].SelfLsns, .. results[1].SelfLsns];
            await darq.CommitAsync();
        }

        await using var reopened = await storage.OpenAsync();
        var replay = (await reopened.RegisterProcessorAsync()).Drain();

        Assert.Equal(selfLsns, replay.Select(m => m.Lsn));
        Assert.Equal([DarqMessageKind.Self, DarqMessageKind.Activity, DarqMessageKind.Activity, DarqMessageKind.Self], replay.Select(m => m.Kind));
        Assert.Equal("charge", DarqActivity.FromMessage(replay[1], reopened.Name).Name);
        Assert.Equal("refund", DarqActivity.FromMessage(replay[2], reopened.Name).Name);
    }

    [Fact]
    public async Task StepBatch_GeneralSpeculation_OneActionAndEveryOutDeliveredWithItsHeader()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator));
        destinations.Registry.Add(b);
        await using var a = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator, destinations));
        var bProcessor = await b.RegisterProcessorAsync(guard.Token);
        var aProcessor = await a.RegisterProcessorAsync(guard.Token);
        var input = await a.EnqueueAsync("in".Bytes(), guard.Token);

        var results = await aProcessor.StepBatchAsync(
        [
            new DarqStep().Consume(input.Lsn).AddOut("b", "x".Bytes()),
            new DarqStep().AddSelf("s".Bytes()).AddOut("b", "y".Bytes()).AddOut("b", "z".Bytes()),
        ], guard.Token);

        var received = new List<DarqMessage>();
        while (received.Count < 3)
        {
            received.Add(await bProcessor.Messages.ReadAsync(guard.Token));
        }

        Assert.Equal(["x", "y", "z"], received.Select(m => m.Text()));
        foreach (long lsn in results.SelectMany(r => r.OutLsns))
        {
            await a.WaitForDeliveredAsync(lsn, guard.Token);
        }

        // Every delivered message depends on the batch's action: recoverable once both sides persist their versions.
        var barrier = b.WaitForRecoverableAsync(received[^1].Lsn, guard.Token).AsTask();
        await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await barrier.WaitAsync(guard.Token);
        Assert.Equal(0, a.PendingOutCount);
        Assert.Equal(1, a.UnconsumedCount);
    }

    [Fact]
    public async Task StepBatch_AutoCheckpoint_CountsEveryStepAndCheckpointsAfterTheBatch()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        processor.EnableAutoCheckpoint(3, deltas => [$"={deltas.Count}".Bytes()]);

        var first = await processor.StepBatchAsync([new DarqStep().AddSelf("1".Bytes()), new DarqStep().AddSelf("2".Bytes())]);
        Assert.Null(processor.LastAutoCheckpoint);
        var second = await processor.StepBatchAsync([new DarqStep().AddSelf("3".Bytes()), new DarqStep().AddSelf("4".Bytes())]);

        // Four steps reached the threshold of three: one checkpoint, after the second batch, replaced all four.
        Assert.Equal(first.Concat(second).Select(r => r.SelfLsns[0]), processor.LastAutoCheckpoint!.ReplacedLsns);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task ReadAvailable_MessagesWaiting_TakesAllUpToMaxWithoutWaiting()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        for (int i = 0; i < 5; i++)
        {
            await darq.EnqueueAsync(BitConverter.GetBytes(i));
        }

        var processor = await darq.RegisterProcessorAsync();
        var buffer = new List<DarqMessage>();

        Assert.Equal(3, await processor.ReadAvailableAsync(buffer, 3, guard.Token));
        Assert.Equal(2, await processor.ReadAvailableAsync(buffer, 10, guard.Token));
        Assert.Equal([0, 1, 2, 3, 4], buffer.Select(m => BitConverter.ToInt32(m.Payload.Span)));
        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => processor.ReadAvailableAsync(buffer, 0).AsTask());

        // An empty stream waits for the next message.
        var pending = processor.ReadAvailableAsync(buffer, 10, guard.Token).AsTask();
        Assert.False(pending.IsCompleted);
        await darq.EnqueueAsync("late".Bytes());
        Assert.Equal(1, await pending.WaitAsync(guard.Token));

        // A newer registration ends the stream with the stale-incarnation error.
        await darq.RegisterProcessorAsync();
        await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => processor.ReadAvailableAsync(buffer, 10, guard.Token).AsTask());
    }

    /// <summary>
    /// Enqueues 40 messages, registers, then steps them (one by one or as one batch): every step consumes its message,
    /// even ones also add a SELF message, every third an activity, and each sends an OUT of <paramref name="outBytes"/>.
    /// Commits, closes, and recovers.
    /// </summary>
    private static async Task<RunResult> RunAsync(bool batched, int outBytes)
    {
        var logStorage = new InMemoryStorage();
        var commitStorage = new InMemoryStorage();
        var options = DarqTestStorage.Options(DseDevices.CreateInMemory(logStorage), DseDevices.CreateInMemory(commitStorage));
        options.MemorySize = 16 * DarqTestStorage.PageSize;
        var payload = new byte[outBytes];
        new Random(5).NextBytes(payload);
        var results = new List<(string Self, string Out, long Completion, long DurableAt)>();
        long tail;
        await using (var darq = await Darq.OpenAsync(options))
        {
            var lsns = new List<long>();
            for (int i = 0; i < 40; i++)
            {
                lsns.Add((await darq.EnqueueAsync(BitConverter.GetBytes(i))).Lsn);
            }

            var processor = await darq.RegisterProcessorAsync();
            var steps = new List<DarqStep>();
            for (int i = 0; i < lsns.Count; i++)
            {
                var step = new DarqStep().Consume(lsns[i]);
                if (i % 2 == 0)
                {
                    step.AddSelf(BitConverter.GetBytes(i));
                }

                if (i % 3 == 0)
                {
                    step.AddActivity("act", BitConverter.GetBytes(i));
                }

                steps.Add(step.AddOut("sink", payload));
            }

            IReadOnlyList<DarqStepResult> stepped;
            if (batched)
            {
                stepped = await processor.StepBatchAsync(steps);
            }
            else
            {
                var one = new List<DarqStepResult>();
                foreach (var step in steps)
                {
                    one.Add(await processor.StepAsync(step));
                }

                stepped = one;
            }

            results.AddRange(stepped.Select(r => (string.Join(",", r.SelfLsns), string.Join(",", r.OutLsns), r.CompletionLsn, r.DurableAt)));
            await darq.CommitAsync();
            tail = darq.TailAddress;
        }

        var log = new byte[tail];
        for (long address = 0; address < tail; address += DarqTestStorage.SegmentSize)
        {
            int length = (int)Math.Min(DarqTestStorage.SegmentSize, tail - address);
            Assert.True(logStorage.TryRead((int)(address / DarqTestStorage.SegmentSize), 0, log.AsSpan((int)address, length)));
        }

        await using var recovered = await Darq.OpenAsync(
            DarqTestStorage.Options(DseDevices.CreateInMemory(logStorage), DseDevices.CreateInMemory(commitStorage)));
        var replay = (await recovered.RegisterProcessorAsync()).Drain()
            .Select(m => (m.Lsn, m.Kind, Convert.ToHexString(m.Payload.Span))).ToList();
        return new RunResult(results, tail, log, replay, recovered.PendingOutCount);
    }

    private sealed record RunResult(List<(string Self, string Out, long Completion, long DurableAt)> Results, long Tail, byte[] Log,
        List<(long Lsn, DarqMessageKind Kind, string Payload)> Replay, int PendingOut);
}
