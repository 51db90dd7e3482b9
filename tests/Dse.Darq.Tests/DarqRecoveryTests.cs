using Dse.Storage;

namespace Dse.Darq.Tests;

/// <summary>Reopen the same in-memory storage in a new DARQ instance, after a clean close or a crash cut.</summary>
[Trait("Category", "Recovery")]
public sealed class DarqRecoveryTests
{
    [Fact]
    public async Task Reopen_AfterDispose_DuplicateFromBeforeRestartIsAcknowledgedWithoutEntry()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            await darq.EnqueueAsync(producerId: 5, sequenceNumber: 3, "a".Bytes());
        }

        await using var reopened = await storage.OpenAsync();
        long tail = reopened.TailAddress;
        var duplicate = await reopened.EnqueueAsync(producerId: 5, sequenceNumber: 3, "a".Bytes());
        var next = await reopened.EnqueueAsync(producerId: 5, sequenceNumber: 4, "b".Bytes());

        Assert.True(duplicate.IsDuplicate);
        Assert.Equal(tail, duplicate.DurableAt);
        Assert.False(next.IsDuplicate);
        Assert.Equal(2, reopened.UnconsumedCount);
    }

    [Fact]
    public async Task Reopen_AfterTruncation_DedupTableSurvivesWithoutTheEntries()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            var a = await darq.EnqueueAsync(producerId: 9, sequenceNumber: 1, "a".Bytes());
            var processor = await darq.RegisterProcessorAsync();
            await processor.StepAsync(new DarqStep().Consume(a.Lsn));
            Assert.Equal(darq.TailAddress, await darq.TruncateAsync());
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(0, reopened.UnconsumedCount);
        Assert.True((await reopened.EnqueueAsync(producerId: 9, sequenceNumber: 1, "a".Bytes())).IsDuplicate);
        Assert.Equal(2, (await reopened.RegisterProcessorAsync()).Incarnation);
    }

    [Fact]
    public async Task Reopen_AfterCrashCut_RestoresLastCommitAndReplaysSelfThenInInLsnOrder()
    {
        var storage = new DarqTestStorage();
        long a, b, c, s1;
        await using (var darq = await storage.OpenAsync())
        {
            a = (await darq.EnqueueAsync("a".Bytes())).Lsn;
            b = (await darq.EnqueueAsync("b".Bytes())).Lsn;
            var processor = await darq.RegisterProcessorAsync();
            s1 = (await processor.StepAsync(new DarqStep().Consume(a).AddSelf("s1".Bytes()))).SelfLsns[0];
            c = (await darq.EnqueueAsync("c".Bytes())).Lsn;
            await darq.CommitAsync();

            // Not committed before the crash: this step and this message are lost, atomically.
            await processor.StepAsync(new DarqStep().Consume(b).Consume(s1).AddSelf("s2".Bytes()));
            await darq.EnqueueAsync("d".Bytes());
            storage.CrashNow();
        }

        await using var reopened = await storage.OpenAsync();
        var recovered = await reopened.RegisterProcessorAsync();
        var replay = recovered.Drain();

        Assert.Equal(2, recovered.Incarnation);
        Assert.Equal([(s1, DarqMessageKind.Self, "s1"), (b, DarqMessageKind.In, "b"), (c, DarqMessageKind.In, "c")],
            replay.Select(m => (m.Lsn, m.Kind, m.Text())));
        Assert.All(replay, m => Assert.True(m.IsReplay));
        await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => reopened.StepAsync(1, new DarqStep().Consume(b)).AsTask());
        await Assert.ThrowsAsync<DarqStepRejectedException>(() => recovered.StepAsync(new DarqStep().Consume(a)).AsTask());
        await recovered.StepAsync(new DarqStep().Consume(b).Consume(s1).Consume(c));
        Assert.Equal(0, reopened.UnconsumedCount);
    }

    [Fact]
    public async Task Reopen_CrashBeforeAnyCommit_StartsEmpty()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            storage.CrashNow();
            await darq.EnqueueAsync(1, 1, "lost".Bytes());
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(0, reopened.UnconsumedCount);
        Assert.False((await reopened.EnqueueAsync(1, 1, "again".Bytes())).IsDuplicate);
    }

    [Fact]
    public async Task Reopen_GarbageAfterLastCommit_RecoversTheLastCommit()
    {
        var storage = new DarqTestStorage();
        long committedTail;
        await using (var darq = await storage.OpenAsync())
        {
            await darq.EnqueueAsync("a".Bytes());
            await darq.CommitAsync();
            committedTail = darq.TailAddress;
            storage.CrashNow();
            await darq.EnqueueAsync("b".Bytes());
        }

        // A torn tail: bytes after the committed tail that no commit covers.
        storage.Log.Write(0, committedTail, Enumerable.Repeat((byte)0xAB, 512).ToArray());

        await using (var reopened = await storage.OpenAsync())
        {
            Assert.Equal(committedTail, reopened.TailAddress);
            Assert.Equal(1, reopened.UnconsumedCount);
            await reopened.EnqueueAsync("c".Bytes());
        }

        await using var again = await storage.OpenAsync();
        Assert.Equal(["a", "c"], (await again.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Reopen_TornNewestCommitRecord_FallsBackToThePreviousCommit()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            await darq.EnqueueAsync("a".Bytes());
            await darq.CommitAsync();
            await darq.EnqueueAsync("b".Bytes());
            await darq.CommitAsync();
            storage.CrashNow();
        }

        storage.TearNewestCommit();

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(["a"], (await reopened.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Reopen_CorruptCommittedEntry_InvalidDataExceptionNamingTheAddress()
    {
        var storage = new DarqTestStorage();
        long corrupt;
        await using (var darq = await storage.OpenAsync())
        {
            await darq.EnqueueAsync("a".Bytes());
            corrupt = (await darq.EnqueueAsync("payload".Bytes())).Lsn;
            await darq.EnqueueAsync("c".Bytes());
        }

        // Inside the payload: FasterLog's 4-byte length, the 24-byte DARQ header, the 16-byte IN prefix.
        storage.CorruptLog(corrupt + 4 + 24 + 16 + 2);

        var error = await Assert.ThrowsAsync<InvalidDataException>(() => storage.OpenAsync());
        Assert.Contains($"at address {corrupt}", error.Message, StringComparison.Ordinal);
        Assert.Contains("checksum", error.Message, StringComparison.Ordinal);
    }
}

/// <summary>Reopen the same local files in a new DARQ instance.</summary>
[Trait("Category", "Recovery")]
public sealed class DarqLocalFileRecoveryTests : IDisposable
{
    private readonly string _directory = Path.Combine(Path.GetTempPath(), "dse-darq-" + Guid.NewGuid().ToString("N"));

    [Fact]
    public async Task Reopen_LocalFiles_RestoresIncarnationDedupAndReplay()
    {
        long s1, b;
        await using (var darq = await OpenAsync())
        {
            var a = await darq.EnqueueAsync(producerId: 1, sequenceNumber: 1, "a".Bytes());
            b = (await darq.EnqueueAsync(producerId: 1, sequenceNumber: 2, "b".Bytes())).Lsn;
            var processor = await darq.RegisterProcessorAsync();
            s1 = (await processor.StepAsync(new DarqStep().Consume(a.Lsn).AddSelf("s1".Bytes()).AddOut("next", "o".Bytes()))).SelfLsns[0];
        }

        await using var reopened = await OpenAsync();
        Assert.True((await reopened.EnqueueAsync(producerId: 1, sequenceNumber: 2, "b".Bytes())).IsDuplicate);
        var recovered = await reopened.RegisterProcessorAsync();
        Assert.Equal(2, recovered.Incarnation);
        Assert.Equal([(s1, "s1"), (b, "b")], recovered.Drain().Select(m => (m.Lsn, m.Text())));
    }

    [Fact]
    public async Task Reopen_LocalFilesWithBackgroundCommit_StepDurabilityCanBeAwaited()
    {
        DarqStepResult step;
        await using (var darq = await OpenAsync(o => o.CommitInterval = TimeSpan.FromMilliseconds(1)))
        {
            var a = await darq.EnqueueAsync("a".Bytes());
            var processor = await darq.RegisterProcessorAsync();
            step = await processor.StepAsync(new DarqStep().Consume(a.Lsn).AddSelf("s".Bytes()));

            // The group commit makes it durable; nothing here commits explicitly.
            await darq.WaitForCommitAsync(step.DurableAt);
        }

        await using var reopened = await OpenAsync();
        Assert.Equal(["s"], (await reopened.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    public void Dispose()
    {
        if (Directory.Exists(_directory))
        {
            Directory.Delete(_directory, recursive: true);
        }
    }

    private Task<Darq> OpenAsync(Action<DarqOptions>? configure = null)
    {
        var options = DarqTestStorage.Options(
            DseDevices.CreateLocalFile(Path.Combine(_directory, "darq.log")),
            DseDevices.CreateLocalFile(Path.Combine(_directory, "darq.commit")));
        configure?.Invoke(options);
        return Darq.OpenAsync(options);
    }
}
