using Dse.Testing;
using Microsoft.Extensions.Time.Testing;

namespace Dse.Darq.Tests;

/// <summary>
/// <see cref="Darq.RetireProducerAsync"/>: a producer that will never send again leaves the deduplication table, so a
/// long-running DARQ whose producers come and go does not fill <see cref="DarqOptions.MaxProducers"/> for good.
/// </summary>
public sealed class DarqProducerRetirementTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Retire_FullTable_FreesASlotForANewProducer()
    {
        // The test storage's table holds 16 producers.
        await using var darq = await new DarqTestStorage().OpenAsync();
        for (long producer = 1; producer <= 16; producer++)
        {
            await darq.EnqueueAsync(producer, 5, "m".Bytes());
        }

        var full = await Assert.ThrowsAsync<InvalidOperationException>(async () => await darq.EnqueueAsync(17, 0, "new".Bytes()));
        Assert.Contains("RetireProducerAsync", full.Message, StringComparison.Ordinal);

        Assert.True(await darq.RetireProducerAsync(3));

        Assert.Equal(15, await darq.ProducerCountAsync());
        Assert.Null(await darq.ProducerSequenceAsync(3));
        Assert.Equal(5, await darq.ProducerSequenceAsync(4));
        Assert.False((await darq.EnqueueAsync(17, 0, "new".Bytes())).IsDuplicate);
        Assert.Equal(16, await darq.ProducerCountAsync());
        Assert.Equal(17, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Retire_UnknownProducer_ReturnsFalseAndChangesNothing()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        await darq.EnqueueAsync(1, 0, "m".Bytes());
        long tail = darq.TailAddress;

        Assert.False(await darq.RetireProducerAsync(2));

        Assert.Equal(1, await darq.ProducerCountAsync());
        Assert.Equal(tail, darq.TailAddress);
        Assert.True((await darq.EnqueueAsync(1, 0, "m".Bytes())).IsDuplicate);
    }

    [Fact]
    public async Task Retire_ThenTheSameProducer_IsANewProducer()
    {
        // The documented cost: after retirement, even an old sequence number is taken again.
        await using var darq = await new DarqTestStorage().OpenAsync(o => o.ContiguousProducerSequences = true);
        await darq.EnqueueAsync(7, 0, "a".Bytes());
        await darq.EnqueueAsync(7, 1, "b".Bytes());
        Assert.True(await darq.RetireProducerAsync(7));

        var gap = await Assert.ThrowsAsync<DarqSequenceGapException>(async () => await darq.EnqueueAsync(7, 2, "c".Bytes()));
        Assert.Equal(0, gap.ExpectedSequenceNumber);
        Assert.False((await darq.EnqueueAsync(7, 0, "a again".Bytes())).IsDuplicate);
        Assert.Equal(3, darq.UnconsumedCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Retire_ThenCrash_ReopenedTableLacksTheProducer()
    {
        var storage = new DarqTestStorage();
        long tail;
        await using (var darq = await storage.OpenAsync())
        {
            await darq.EnqueueAsync(1, 4, "a".Bytes());
            await darq.EnqueueAsync(2, 9, "b".Bytes());
            await darq.CommitAsync();
            tail = darq.TailAddress;

            // Returns once a commit without the producer is durable (these tests have no group commit): nothing was appended.
            Assert.True(await darq.RetireProducerAsync(1));
            Assert.Equal(tail, darq.TailAddress);
            storage.CrashNow();
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Null(await reopened.ProducerSequenceAsync(1));
        Assert.Equal(9, await reopened.ProducerSequenceAsync(2));
        Assert.Equal(tail, reopened.TailAddress);
        Assert.Equal(2, reopened.UnconsumedCount);
    }

    [Fact]
    public async Task Retire_General_ReturnsOnceTheVersionThatRemovedItIsCommitted()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator));
        await b.EnqueueAsync(9, 1, "m1".Bytes(), guard.Token);

        var retire = b.RetireProducerAsync(9, guard.Token).AsTask();
        await WaitUntilAsync(async () => await b.ProducerSequenceAsync(9, guard.Token) is null, guard.Token);
        Assert.False(retire.IsCompleted, "versions advance only when the test says so: nothing committed the removal yet");

        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        Assert.True(await retire.WaitAsync(guard.Token));
        Assert.True(b.DseStateObject.CommittedVersion >= 1);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Retire_GeneralRolledBack_ThrowsAndTheProducerComesBack()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator));
        await b.EnqueueAsync(9, 1, "m1".Bytes(), guard.Token);
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.DseStateObject.WaitForCommitAsync(1, 0, guard.Token);

        Task<bool> retire;
        await using (var a = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator)))
        {
            // B's next version depends on A's state that never persists, and retires producer 9.
            await a.EnqueueAsync("x".Bytes(), guard.Token);
            await a.DseStateObject!.StartLocalActionAsync(guard.Token);
            var fromA = a.DseStateObject.EndAction();
            await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "from-a".Bytes()) { DseHeader = fromA.ToArray() }, guard.Token);
            retire = b.RetireProducerAsync(9, guard.Token).AsTask();
            await WaitUntilAsync(async () => await b.ProducerSequenceAsync(9, guard.Token) is null, guard.Token);
            await b.DseStateObject.AdvanceVersionAsync(guard.Token);
            aStorage.CrashNow();
        }

        await using var a2 = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator));
        await b.DseStateObject.RefreshAsync(guard.Token);

        await Assert.ThrowsAsync<DseRolledBackException>(() => retire.WaitAsync(guard.Token));
        Assert.Equal(1, b.DseStateObject.WorldLine);
        Assert.Equal(1, await b.ProducerSequenceAsync(9, guard.Token));
        Assert.True((await b.EnqueueAsync(9, 1, "m1".Bytes(), guard.Token)).IsDuplicate);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Retire_WithGroupCommitThenCrash_ReopenedTableLacksTheProducer()
    {
        // The group commit may carry the new table first; the retirement still returns only once a commit lacking the
        // producer is durable, so a crash right after it cannot bring the producer back.
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync(o => o.CommitInterval = TimeSpan.FromMilliseconds(1)))
        {
            for (long producer = 1; producer <= 8; producer++)
            {
                await darq.EnqueueAsync(producer, 3, "m".Bytes());
            }

            await darq.CommitAsync();
            for (long producer = 1; producer <= 8; producer++)
            {
                Assert.True(await darq.RetireProducerAsync(producer));
            }

            storage.CrashNow();
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(0, await reopened.ProducerCountAsync());
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Retire_GroupCommitIssuedBetweenRemovalAndItsCommit_ReturnsOnlyOnceDurable()
    {
        // The interleaving that made a retirement return early: the removal, then a group commit that carries the new
        // table (its write still in flight), then the retirement's own commit, which found nothing appended since that
        // commit and returned without waiting for it. A checkpoint whose snapshot blocks holds the gate meanwhile, so the
        // retirement and the commit queue behind it in that order; the snapshot then throws, appending nothing.
        var storage = new DarqTestStorage();
        HoldingDevice? commits = null;
        await using (var darq = await storage.OpenAsync(o => o.CommitDevice = commits = new HoldingDevice(o.CommitDevice!)))
        {
            await darq.EnqueueAsync(7, 1, "m".Bytes());
            var processor = await darq.RegisterProcessorAsync();
            var message = await processor.Messages.ReadAsync();
            await processor.StepAsync(new DarqStep().Consume(message).AddSelf("state".Bytes()));
            await darq.CommitAsync();

            using var snapshotEntered = new ManualResetEventSlim();
            using var snapshotRelease = new ManualResetEventSlim();
            var checkpoint = Task.Run(async () => await processor.CheckpointAsync(_ =>
            {
                snapshotEntered.Set();
                snapshotRelease.Wait();
                throw new InvalidOperationException("refused on purpose");
            }));
            Assert.True(snapshotEntered.Wait(TimeSpan.FromSeconds(30)), "the snapshot function did not run");

            // Both wait for the gate the checkpoint holds, the retirement first.
            var retire = darq.RetireProducerAsync(7).AsTask();
            var groupCommit = darq.CommitAsync().AsTask();
            commits!.Hold();
            snapshotRelease.Set();
            await Assert.ThrowsAsync<InvalidOperationException>(() => checkpoint);

            // Exactly one of the two can finish while the commit records are held back. The retirement that waits for its
            // own commit leaves the group commit nothing new to commit, so that returns at once; the old retirement
            // returned instead, with the group commit that carried the new table still held. Only then do the records go
            // through; a retirement that returned before must already be durable, which the crash below checks.
            if (await Task.WhenAny(retire, groupCommit) == groupCommit)
            {
                commits.Release();
            }

            Assert.True(await retire);
            storage.CrashNow();
            commits.Release();
            await groupCommit;
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(0, await reopened.ProducerCountAsync());
        Assert.Null(await reopened.ProducerSequenceAsync(7));
    }

    /// <summary>Polls a condition the test cannot await directly (the removal happens inside an action).</summary>
    private static async Task WaitUntilAsync(Func<Task<bool>> condition, CancellationToken cancellationToken)
    {
        while (!await condition())
        {
            await Task.Delay(1, cancellationToken);
        }
    }

    [Fact]
    public async Task Retire_ClosedDarq_ThrowsObjectDisposed()
    {
        var darq = await new DarqTestStorage().OpenAsync();
        await darq.DisposeAsync();

        await Assert.ThrowsAsync<ObjectDisposedException>(async () => await darq.RetireProducerAsync(1));
    }

    private static readonly TimeSpan Idle = TimeSpan.FromMinutes(10);

    private static Action<DarqOptions> RetireIdle(TimeProvider clock) => o =>
    {
        o.RetireIdleProducersAfter = Idle;
        o.TimeProvider = clock;
    };

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task RetireIdle_ProducerSilentForThePeriod_RetiredAtTheNextCommitDurably()
    {
        var storage = new DarqTestStorage();
        var clock = new FakeTimeProvider();
        var events = new LogCapture();
        await using (var darq = await storage.OpenAsync(RetireIdle(clock), events))
        {
            await darq.EnqueueAsync(1, 0, "a".Bytes());
            await darq.EnqueueAsync(2, 0, "b".Bytes());
            await darq.CommitAsync();

            clock.Advance(TimeSpan.FromMinutes(6));
            await darq.EnqueueAsync(2, 1, "c".Bytes());
            await darq.CommitAsync();
            Assert.Equal(2, await darq.ProducerCountAsync());

            // Producer 1 has been silent for 11 minutes, producer 2 for 5.
            clock.Advance(TimeSpan.FromMinutes(5));
            await darq.CommitAsync();

            Assert.Equal(1, await darq.ProducerCountAsync());
            Assert.Null(await darq.ProducerSequenceAsync(1));
            Assert.Equal(1, await darq.ProducerSequenceAsync(2));
            Assert.Equal([4023, 4022], events.Entries.Select(e => e.EventId.Id).Where(id => id is 4022 or 4023));
            Assert.Equal(3, darq.UnconsumedCount);
        }

        // The commit carried the smaller table: a crash right after it loses nothing of the retirement.
        storage.CrashNow();
        await using var reopened = await storage.OpenAsync(RetireIdle(clock));
        Assert.Equal(1, await reopened.ProducerCountAsync());
        Assert.Null(await reopened.ProducerSequenceAsync(1));

        // The documented cost: the retired producer is a new producer, an old number included.
        Assert.False((await reopened.EnqueueAsync(1, 0, "a again".Bytes())).IsDuplicate);
        Assert.True((await reopened.EnqueueAsync(2, 1, "c again".Bytes())).IsDuplicate);
    }

    [Fact]
    public async Task RetireIdle_AResendCountsAsSending()
    {
        var clock = new FakeTimeProvider();
        await using var darq = await new DarqTestStorage().OpenAsync(RetireIdle(clock));
        await darq.EnqueueAsync(1, 0, "a".Bytes());
        clock.Advance(TimeSpan.FromMinutes(8));
        Assert.True((await darq.EnqueueAsync(1, 0, "a".Bytes())).IsDuplicate);

        clock.Advance(TimeSpan.FromMinutes(8));
        await darq.CommitAsync();
        Assert.Equal(0, await darq.ProducerSequenceAsync(1));

        clock.Advance(TimeSpan.FromMinutes(2));
        await darq.CommitAsync();
        Assert.Null(await darq.ProducerSequenceAsync(1));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task RetireIdle_AfterAReopen_TheClockStartsAtTheOpen()
    {
        var storage = new DarqTestStorage();
        var clock = new FakeTimeProvider();
        await using (var darq = await storage.OpenAsync(RetireIdle(clock)))
        {
            await darq.EnqueueAsync(1, 0, "a".Bytes());
            clock.Advance(TimeSpan.FromMinutes(9));
        }

        await using var reopened = await storage.OpenAsync(RetireIdle(clock));
        // 18 minutes since producer 1 sent, 9 since the open: kept.
        clock.Advance(TimeSpan.FromMinutes(9));
        await reopened.CommitAsync();
        Assert.Equal(0, await reopened.ProducerSequenceAsync(1));

        clock.Advance(TimeSpan.FromMinutes(1));
        await reopened.CommitAsync();
        Assert.Null(await reopened.ProducerSequenceAsync(1));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task RetireIdle_DueAtTheFinalCommitOfAClose_RetiredAndTheCloseStillCommits()
    {
        var storage = new DarqTestStorage();
        var clock = new FakeTimeProvider();
        long pending;
        await using (var darq = await storage.OpenAsync(RetireIdle(clock)))
        {
            await darq.EnqueueAsync(1, 0, "a".Bytes());
            await darq.CommitAsync();
            clock.Advance(TimeSpan.FromMinutes(11));
            // Not committed before the close: only the close's own commit makes it durable.
            pending = (await darq.EnqueueAsync("pending".Bytes())).Lsn;
        }

        await using var reopened = await storage.OpenAsync(RetireIdle(clock));
        Assert.Equal(2, reopened.UnconsumedCount);
        Assert.Null(await reopened.ProducerSequenceAsync(1));
        var processor = await reopened.RegisterProcessorAsync();
        Assert.Equal(2, processor.ReplayCount);
        Assert.True(processor.Messages.TryRead(out _));
        Assert.True(processor.Messages.TryRead(out var last));
        Assert.Equal(pending, last.Lsn);
    }

    [Fact]
    public async Task RetireIdle_OffByDefault_AndBadValuesRefusedNamingTheOption()
    {
        var clock = new FakeTimeProvider();
        await using (var darq = await new DarqTestStorage().OpenAsync(o => o.TimeProvider = clock))
        {
            await darq.EnqueueAsync(1, 0, "a".Bytes());
            clock.Advance(TimeSpan.FromDays(400));
            await darq.CommitAsync();
            Assert.Equal(0, await darq.ProducerSequenceAsync(1));
        }

        foreach (var bad in new[] { TimeSpan.Zero, TimeSpan.FromSeconds(-1), Timeout.InfiniteTimeSpan })
        {
            var error = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => new DarqTestStorage().OpenAsync(o => o.RetireIdleProducersAfter = bad));
            Assert.Equal(nameof(DarqOptions.RetireIdleProducersAfter), error.ParamName);
        }

        var general = await Assert.ThrowsAsync<ArgumentException>(() => new DarqTestStorage().OpenAsync(o =>
        {
            o.RetireIdleProducersAfter = Idle;
            o.Speculation = DarqSpeculationMode.General;
        }));
        Assert.Equal(nameof(DarqOptions.RetireIdleProducersAfter), general.ParamName);
        Assert.Contains("RetireProducerAsync", general.Message, StringComparison.Ordinal);
    }
}
