namespace Dse.Tests;

/// <summary>Regression tests for defects found in review of the runtime's concurrency and recovery paths.</summary>
public class ReviewRegressionTests
{
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
    public async Task Rollback_RestoreThrows_FaultsInsteadOfKeepingLaterState()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        a.Store.AutoDurable = false;
        await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 2);
        await b.AdvanceVersionAsync();
        b.OnRestore = _ => throw new IOException("storage unavailable");
        await a.DisposeAsync();
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(coordinator);

        await Assert.ThrowsAsync<DseFaultedException>(() => b.RefreshAsync().AsTask());

        Assert.IsType<DseFaultedException>(b.Fault);
        Assert.Equal(0, b.WorldLine);
        await Assert.ThrowsAsync<DseFaultedException>(() => b.RefreshAsync().AsTask());
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
    public async Task MergeAsync_SthreadOfAnotherObject_ThrowsNamingBoth()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        Assert.True(a.TryStartLocalAction());
        var sthread = a.Detach();

        var ex = await Assert.ThrowsAsync<ArgumentException>(() => b.MergeAsync(sthread).AsTask());
        Assert.Contains("StateObject 1", ex.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentException>(() => b.TryMerge(sthread));
    }

    [Fact]
    public async Task ReportPersisted_OlderThanRetainedDecisions_IsStale()
    {
        var c = new ClusterCoordinator(new ClusterCoordinatorOptions { MaxRetainedDecisions = 1 });
        await c.ConnectAsync(new ConnectRequest(1, []));
        await c.ConnectAsync(new ConnectRequest(2, []));
        for (int i = 0; i < 3; i++)
        {
            await c.ConnectAsync(new ConnectRequest(1, []));
        }

        Assert.Equal(ReportOutcome.Stale, await c.ReportPersistedAsync(2, new VersionReport(1, 0, [])));
        Assert.Equal(ReportOutcome.Accepted, await c.ReportPersistedAsync(2, new VersionReport(1, 3, [])));
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

    [Fact]
    public async Task Acknowledgements_FirstOneFails_AllAreDeliveredInOrderAndKeptVersionsCommit()
    {
        var inner = new ClusterCoordinator();
        var flaky = new FlakyAcknowledgements(inner) { FailuresLeft = 1 };
        var a = await TestCluster.ConnectAsync(inner, 1);
        var c = await TestCluster.ConnectAsync(inner, 3);
        var b = MemoryStateObject.Create(2);
        await b.ConnectAsync(flaky);
        b.Store.AutoDurable = false;
        TestCluster.Send(b, 20);
        await b.AdvanceVersionAsync();   // persisted in world-line 0, not yet durable

        // Two unrelated restarts; b keeps its state through both, and its first acknowledgement is lost.
        await a.DisposeAsync();
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(inner);
        await c.DisposeAsync();
        await MemoryStateObject.Create(3, c.Store).ConnectAsync(inner);
        await b.RefreshAsync();
        Assert.Equal(2, b.WorldLine);

        b.Store.CompleteOldest();
        await b.RefreshAsync();

        Assert.Equal([1L, 2L], flaky.Delivered);
        Assert.Equal(1, b.CommittedVersion);
    }

    private sealed class FlakyAcknowledgements(ClusterCoordinator inner) : IDseCoordinator
    {
        public int FailuresLeft { get; set; }

        public List<long> Delivered { get; } = [];

        public ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default) => inner.ConnectAsync(request, cancellationToken);

        public ValueTask<ReportOutcome> ReportPersistedAsync(long objectId, VersionReport report, CancellationToken cancellationToken = default) => inner.ReportPersistedAsync(objectId, report, cancellationToken);

        public async ValueTask AcknowledgeRollbackAsync(long objectId, long worldLine, long keptThrough, CancellationToken cancellationToken = default)
        {
            if (FailuresLeft > 0)
            {
                FailuresLeft--;
                throw new IOException("coordinator unreachable");
            }

            await inner.AcknowledgeRollbackAsync(objectId, worldLine, keptThrough, cancellationToken);
            Delivered.Add(worldLine);
        }

        public ValueTask<ClusterState> ResyncAsync(ResyncRequest request, CancellationToken cancellationToken = default) => inner.ResyncAsync(request, cancellationToken);

        public ValueTask HeartbeatAsync(long objectId, CancellationToken cancellationToken = default) => inner.HeartbeatAsync(objectId, cancellationToken);

        public ValueTask<ClusterState> GetStateAsync(CancellationToken cancellationToken = default) => inner.GetStateAsync(cancellationToken);

        public ValueTask<ClusterState> WaitForChangeAsync(long knownEpoch, CancellationToken cancellationToken = default) => inner.WaitForChangeAsync(knownEpoch, cancellationToken);
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
