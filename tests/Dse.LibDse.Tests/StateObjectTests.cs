using Microsoft.Extensions.Time.Testing;
namespace Dse.Tests;

public class StateObjectTests
{
    [Fact]
    public async Task ConnectAsync_FreshStorage_RestoresInitialStateAtVersionOne()
    {
        var so = await TestCluster.ConnectAsync(new ClusterCoordinator(), 1);

        Assert.Equal([0L], so.RestoredVersions);
        Assert.Equal(1, so.CurrentVersion);
        Assert.Equal(0, so.WorldLine);
        Assert.True(so.IsConnected);
    }

    [Fact]
    public async Task ConnectAsync_Twice_Throws()
    {
        var coordinator = new ClusterCoordinator();
        var so = await TestCluster.ConnectAsync(coordinator, 1);
        await Assert.ThrowsAsync<InvalidOperationException>(() => so.ConnectAsync(coordinator).AsTask());
    }

    [Fact]
    public void TryStartLocalAction_NotConnected_ThrowsNamingConnect()
    {
        var so = MemoryStateObject.Create(1);
        var ex = Assert.Throws<InvalidOperationException>(() => so.TryStartLocalAction());
        Assert.Contains("ConnectAsync", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Constructor_InvalidOptions_ThrowsNamingOption()
    {
        var ex = Assert.Throws<ArgumentException>(() => new MemoryStateObject(new DseOptions(), new MemoryVersionStore()));
        Assert.Contains("ObjectId", ex.Message, StringComparison.Ordinal);
        ex = Assert.Throws<ArgumentException>(() => new MemoryStateObject(new DseOptions { ObjectId = 1, GroupCommitPeriod = TimeSpan.Zero }, new MemoryVersionStore()));
        Assert.Contains("GroupCommitPeriod", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task EndAction_LocalAction_ReturnsOriginHeaderOfCurrentVertex()
    {
        var so = await TestCluster.ConnectAsync(new ClusterCoordinator(), 7);

        var header = TestCluster.Send(so, 1);

        Assert.Equal(new Vertex(7, 0, 1), header.Origin);
    }

    [Fact]
    public async Task AdvanceVersionAsync_PersistsCurrentVersionWithMetadataAndMovesOn()
    {
        var so = await TestCluster.ConnectAsync(new ClusterCoordinator(), 1);
        TestCluster.Send(so, 10);

        await so.AdvanceVersionAsync();

        Assert.Equal(2, so.CurrentVersion);
        var stored = Assert.Single(so.Store.Durable);
        Assert.Equal(1, stored.Key);
        Assert.Equal([10L], stored.Value.History);
        var report = VersionMetadata.Decode(1, stored.Value.Metadata);
        Assert.Equal(0, report.WorldLine);
        Assert.Empty(report.Dependencies);
    }

    [Fact]
    public async Task RefreshAsync_StoreNotReadyToPersist_SkipsThePeriodicAdvanceButNotAnExplicitOne()
    {
        var time = new FakeTimeProvider();
        var so = MemoryStateObject.Create(1, period: TimeSpan.FromMilliseconds(10), time: time);
        await so.ConnectAsync(new ClusterCoordinator());
        TestCluster.Send(so, 10);
        time.Advance(TimeSpan.FromMilliseconds(20));

        // The period has passed and the version is dirty, but the store is not ready: the version grows instead.
        so.ReadyToPersist = false;
        await so.RefreshAsync();
        Assert.Equal(1, so.CurrentVersion);
        TestCluster.Send(so, 11);

        so.ReadyToPersist = true;
        await so.RefreshAsync();
        Assert.Equal(2, so.CurrentVersion);
        Assert.Equal([10L, 11L], so.Store.Durable[1].History);

        // An explicit advance does not ask.
        so.ReadyToPersist = false;
        TestCluster.Send(so, 12);
        await so.AdvanceVersionAsync();
        Assert.Equal(3, so.CurrentVersion);
    }

    [Fact]
    public async Task StartActionAsync_MessageFromOtherObject_RecordsDependencyInPersistMetadata()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);

        Assert.True(await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 2));
        await b.AdvanceVersionAsync();

        var report = VersionMetadata.Decode(1, b.Store.Durable[1].Metadata);
        Assert.Equal([new Dependency(1, 1)], report.Dependencies);
    }

    [Fact]
    public async Task TryStartAction_MessageFromHigherVersion_ReportsVersionBehindUntilAdvanced()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        for (int i = 0; i < 3; i++)
        {
            await a.AdvanceVersionAsync();
        }

        // b's current version holds an action, so it must be persisted before b moves up.
        Assert.True(b.TryStartLocalAction());
        b.EndAction();
        var header = TestCluster.Send(a, 1);
        Assert.Equal(4, header.Origin.Version);

        Assert.Equal(StartActionStatus.VersionBehind, b.TryStartAction(header));
        Assert.Equal(1, b.CurrentVersion);

        Assert.True(await b.StartActionAsync(header));
        Assert.True(b.CurrentVersion >= 4, "commit ordering: the receiver advanced before receiving");
        b.EndAction();
        Assert.Contains(1L, b.Store.Durable.Keys);
    }

    [Fact]
    public async Task StartActionAsync_MessageFromHigherVersion_CleanReceiverMovesUpWithoutPersisting()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        for (int i = 0; i < 3; i++)
        {
            await a.AdvanceVersionAsync();
        }

        // No action ran in b's version 1: nothing names it, so b takes the sender's number and persists nothing.
        var header = TestCluster.Send(a, 1);
        Assert.True(await b.StartActionAsync(header));
        Assert.Equal(4, b.CurrentVersion);
        b.EndAction();
        Assert.Empty(b.Store.Durable.Keys);

        // The renumbered version is persisted as 4 at the next advance, with the dependency on a's version 4.
        await b.AdvanceVersionAsync();
        Assert.Contains(4L, b.Store.Durable.Keys);
    }

    [Fact]
    public async Task TryStartAction_MessageFromLowerWorldLine_IsDiscarded()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        var c = await TestCluster.ConnectAsync(coordinator, 3);
        var old = TestCluster.Send(a, 1);

        // c restarts: the cluster moves to world-line 1.
        await c.DisposeAsync();
        var c2 = MemoryStateObject.Create(3, c.Store);
        await c2.ConnectAsync(coordinator);
        await b.RefreshAsync();

        Assert.Equal(1, b.WorldLine);
        Assert.Equal(StartActionStatus.Discard, b.TryStartAction(old));
        Assert.False(await b.StartActionAsync(old));
        Assert.Empty(b.History);
    }

    [Fact]
    public async Task TryStartAction_MessageFromLowerWorldLineWhoseOriginSurvived_IsAccepted()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        var c = await TestCluster.ConnectAsync(coordinator, 3);
        var header = TestCluster.Send(a, 1);
        await a.AdvanceVersionAsync();   // a@1 durable: it survives the coming decision

        await c.DisposeAsync();
        await MemoryStateObject.Create(3, c.Store).ConnectAsync(coordinator);
        await b.RefreshAsync();
        Assert.Equal(1, b.WorldLine);
        Assert.Equal(0, header.WorldLine);

        // a has not caught up yet, but what it sent survived: b takes it (and records the edge).
        Assert.True(await TestCluster.ReceiveAsync(b, header, 2));
        await b.AdvanceVersionAsync();
        Assert.Equal([2L], b.History);
    }

    [Fact]
    public async Task TryStartAction_MessageFromHigherWorldLine_IsDelayedUntilCaughtUp()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        await a.DisposeAsync();
        var a2 = MemoryStateObject.Create(1, a.Store);
        await a2.ConnectAsync(coordinator);
        var fromFuture = TestCluster.Send(a2, 1);

        Assert.Equal(StartActionStatus.WorldLineBehind, b.TryStartAction(fromFuture));
        Assert.Equal(0, b.WorldLine);

        // The waiting start refreshes from the coordinator, applies the rollback, then receives.
        Assert.True(await TestCluster.ReceiveAsync(b, fromFuture, 2));
        Assert.Equal(1, b.WorldLine);
        Assert.Equal([2L], b.History);
    }

    [Fact]
    public async Task StartActionAsync_MalformedHeaderBytes_ThrowsFormatExceptionAndStartsNothing()
    {
        var so = await TestCluster.ConnectAsync(new ClusterCoordinator(), 1);

        await Assert.ThrowsAsync<DseHeaderFormatException>(() => so.StartActionAsync(new byte[] { 0xD5, 1, 1 }).AsTask());

        // No action is open: a version advance does not wait for one.
        await so.AdvanceVersionAsync();
        Assert.Equal(2, so.CurrentVersion);
    }

    [Fact]
    public async Task StartActionAsync_NoHeader_RunsAsLocalAction()
    {
        var so = await TestCluster.ConnectAsync(new ClusterCoordinator(), 1);
        Assert.True(await so.StartActionAsync(ReadOnlyMemory<byte>.Empty));
        so.EndAction();
    }

    [Fact]
    public async Task Boundary_DependentVersion_CommitsOnlyAfterItsDependency()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        a.Store.AutoDurable = false;
        await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 2);

        await a.AdvanceVersionAsync();
        await b.AdvanceVersionAsync();
        await b.RefreshAsync();
        Assert.Equal(0, b.CommittedVersion);

        a.Store.CompleteOldest();
        await b.RefreshAsync();
        await a.RefreshAsync();
        Assert.Equal(1, b.CommittedVersion);
        Assert.Equal(1, a.CommittedVersion);
    }

    [Fact]
    public async Task RefreshAsync_CommittedAdvances_PrunesVersionsBelowCommitted()
    {
        var so = await TestCluster.ConnectAsync(new ClusterCoordinator(), 1);
        for (int i = 0; i < 3; i++)
        {
            TestCluster.Send(so, i);
            await so.AdvanceVersionAsync();
        }

        await so.RefreshAsync();

        Assert.Equal(3, so.CommittedVersion);
        Assert.Equal([2L], so.PrunedThrough);
        Assert.Equal([3L], so.Store.Durable.Keys);
    }

    [Fact]
    public async Task EndActionAsync_NonSpeculative_ReturnsOnlyOnceTheVersionIsRecoverable()
    {
        var coordinator = new ClusterCoordinator();
        await using var so = await TestCluster.ConnectAsync(coordinator, 1, speculative: false, background: true);
        so.Store.AutoDurable = false;

        await so.StartLocalActionAsync();
        so.Record(1);
        var pending = so.EndActionAsync().AsTask();

        // Not durable yet, so not recoverable: the header must not leave. Make it durable and it does.
        await so.Store.WaitForPendingAsync();
        Assert.False(pending.IsCompleted);
        so.Store.CompleteOldest();
        var header = await pending;

        Assert.True(coordinator.State.CommittedVersion(1) >= header.Origin.Version);
    }

    [Fact]
    public async Task EndActionAsync_Speculative_ReturnsAtOnce()
    {
        var so = await TestCluster.ConnectAsync(new ClusterCoordinator(), 1);
        await so.StartLocalActionAsync();
        var task = so.EndActionAsync();
        Assert.True(task.IsCompletedSuccessfully);
    }

    [Fact]
    public async Task Persist_Throws_FaultsTheStateObject()
    {
        var so = new ThrowingStateObject();
        await so.ConnectAsync(new ClusterCoordinator());

        await Assert.ThrowsAsync<InvalidOperationException>(() => so.AdvanceVersionAsync().AsTask());

        Assert.IsType<DseFaultedException>(so.Fault);
        Assert.Throws<DseFaultedException>(() => so.TryStartLocalAction());
    }

    [Fact]
    public async Task PersistCompletion_SetFailed_FaultsTheStateObject()
    {
        var so = await TestCluster.ConnectAsync(new ClusterCoordinator(), 1);
        so.Store.AutoDurable = false;
        await so.AdvanceVersionAsync();

        so.Store.Pending[0].Completion.SetFailed(new IOException("disk gone"));

        var ex = Assert.Throws<DseFaultedException>(() => so.TryStartLocalAction());
        Assert.IsType<IOException>(ex.InnerException);
    }

    [Fact]
    public async Task ConnectAsync_CorruptStoredMetadata_ThrowsNamingVersion()
    {
        var store = new MemoryVersionStore();
        store.Durable[3] = new MemoryVersionStore.Snapshot([1, 2, 3], []);
        var so = MemoryStateObject.Create(1, store);

        var ex = await Assert.ThrowsAsync<DseHeaderFormatException>(() => so.ConnectAsync(new ClusterCoordinator()).AsTask());
        Assert.Contains("version 3", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task StartActionAsync_CancelledWhileAdvancing_DoesNotLeakTheAction()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        using var cts = new CancellationTokenSource();
        var b = new CancellingStateObject(2, cts);
        await b.ConnectAsync(coordinator);
        for (int i = 0; i < 3; i++)
        {
            await a.AdvanceVersionAsync();
        }

        // b must advance first (commit ordering); its Persist cancels the token, as a request timeout would.
        bool started = await b.StartActionAsync(TestCluster.Send(a, 1), cts.Token);

        Assert.True(started);
        b.EndAction();
        await b.AdvanceVersionAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(30));
    }

    [Fact]
    public async Task EndAction_WithoutStart_FaultsWithAClearMessageInsteadOfOverlappingPersist()
    {
        var so = await TestCluster.ConnectAsync(new ClusterCoordinator(), 1);
        Assert.True(so.TryStartLocalAction());
        so.EndAction();
        so.EndAction();

        await Assert.ThrowsAsync<DseFaultedException>(() => so.AdvanceVersionAsync().AsTask());

        Assert.Contains("ended more often than started", so.Fault!.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task TryStartAction_ViewAheadOfWorldLine_StillRecordsDependencies()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        var c = await TestCluster.ConnectAsync(coordinator, 3);
        var header = TestCluster.Send(a, 1);
        await a.AdvanceVersionAsync();
        await c.DisposeAsync();
        await MemoryStateObject.Create(3, c.Store).ConnectAsync(coordinator);

        // b's view is world-line 1 (a@1 committed there) but b itself is still in world-line 0: the edge must stay.
        b.PublishView(coordinator.State);
        Assert.Equal(0, b.WorldLine);
        Assert.Equal(StartActionStatus.Accepted, b.TryStartAction(header));
        b.EndAction();
        await b.AdvanceVersionAsync();
        Assert.Equal([new Dependency(1, 1)], VersionMetadata.Decode(1, b.Store.Durable[1].Metadata).Dependencies);
    }

    [Fact]
    public async Task EndActionAsync_NonSpeculative_DisposedWhileWaiting_ThrowsInsteadOfHanging()
    {
        var so = await TestCluster.ConnectAsync(new ClusterCoordinator(), 1, speculative: false);
        so.Store.AutoDurable = false;
        await so.StartLocalActionAsync();
        var pending = so.EndActionAsync().AsTask();

        await so.DisposeAsync();

        await Assert.ThrowsAsync<DseFaultedException>(() => pending.WaitAsync(TimeSpan.FromSeconds(30)));
    }

    [Fact]
    public async Task EndActionAsync_NonSpeculative_KeptThroughRollback_CompletesInsteadOfThrowing()
    {
        var coordinator = new ClusterCoordinator();
        var other = await TestCluster.ConnectAsync(coordinator, 1);
        var so = await TestCluster.ConnectAsync(coordinator, 2, speculative: false);
        so.Store.AutoDurable = false;
        await so.StartLocalActionAsync();
        so.Record(1);
        var pending = so.EndActionAsync().AsTask();

        // Another participant restarts; so depends on nothing lost, so it keeps its version.
        await other.DisposeAsync();
        await MemoryStateObject.Create(1, other.Store).ConnectAsync(coordinator);
        await so.RefreshAsync();
        Assert.Equal(1, so.WorldLine);
        Assert.Equal([0L], so.RestoredVersions);

        so.Store.CompleteOldest();
        await so.RefreshAsync();
        var header = await pending.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.True(so.CommittedVersion >= header.Origin.Version);
    }

    [Fact]
    public async Task EndActionAsync_NonSpeculative_VersionRolledBack_ThrowsWithoutAnotherBoundaryChange()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var so = await TestCluster.ConnectAsync(coordinator, 2, speculative: false);
        a.Store.AutoDurable = false;
        so.Store.AutoDurable = false;
        Assert.True(await so.StartActionAsync(TestCluster.Send(a, 1)));
        var pending = so.EndActionAsync().AsTask();

        await a.DisposeAsync();
        a.Store.Crash();
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(coordinator);
        await so.RefreshAsync();   // publishes the view, then applies the decision: nothing else will change

        await Assert.ThrowsAsync<DseRolledBackException>(() => pending.WaitAsync(TimeSpan.FromSeconds(30)));
    }

    private sealed class ThrowingStateObject() : StateObject(new DseOptions { ObjectId = 1, RunBackgroundTasks = false })
    {
        protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion) => throw new InvalidOperationException("boom");

        protected override ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken) => ValueTask.FromResult(ReadOnlyMemory<byte>.Empty);

        protected override void Prune(long version)
        {
        }

        protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken) =>
            ValueTask.FromResult<IReadOnlyList<PersistedVersion>>([]);
    }

    private sealed class CancellingStateObject(long id, CancellationTokenSource cts) : StateObject(new DseOptions { ObjectId = id, RunBackgroundTasks = false })
    {
        protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
        {
            cts.Cancel();
            completion.SetDurable();
        }

        protected override ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken) => ValueTask.FromResult(ReadOnlyMemory<byte>.Empty);

        protected override void Prune(long version)
        {
        }

        protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken) =>
            ValueTask.FromResult<IReadOnlyList<PersistedVersion>>([]);
    }
}
