namespace Dse.Tests;

[Trait("Category", "Recovery")]
public class RollbackTests
{
    [Fact]
    public async Task Restart_DependentOnLostVersion_DependentRollsBack()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        a.Store.AutoDurable = false;
        Assert.True(await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 2));
        await a.AdvanceVersionAsync();   // in flight, never durable
        await b.AdvanceVersionAsync();   // durable, reported, depends on a@1

        // a crashes: its pending persist is lost; a new instance on the same storage connects.
        a.Store.Crash();
        await a.DisposeAsync();
        var a2 = MemoryStateObject.Create(1, a.Store);
        await a2.ConnectAsync(coordinator);

        Assert.Equal(1, a2.WorldLine);
        Assert.Equal([0L], a2.RestoredVersions);
        var decision = Assert.Single(coordinator.State.Decisions);
        Assert.Equal(0, decision.CutFor(2));

        await b.RefreshAsync();
        Assert.Equal(1, b.WorldLine);
        Assert.Equal([0L, 0L], b.RestoredVersions);
        Assert.Empty(b.History);
        Assert.Empty(b.Store.Durable);
    }

    [Fact]
    public async Task Restart_IndependentObject_KeepsItsStateWithoutRestoring()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var c = await TestCluster.ConnectAsync(coordinator, 3);
        c.Store.AutoDurable = false;
        TestCluster.Send(c, 30);
        await c.AdvanceVersionAsync();   // persisted, not yet durable
        TestCluster.Send(c, 31);         // in memory only

        await a.DisposeAsync();
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(coordinator);
        await c.RefreshAsync();

        Assert.Equal(1, c.WorldLine);
        Assert.Equal([0L], c.RestoredVersions);
        Assert.Equal([30L, 31L], c.History);

        // Its kept version is reported after the rollback and commits.
        c.Store.CompleteOldest();
        await c.RefreshAsync();
        Assert.Equal(1, c.CommittedVersion);
    }

    [Fact]
    public async Task Restart_SurvivingDurableState_IsRestoredNotLost()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        TestCluster.Send(a, 1);
        await a.AdvanceVersionAsync();
        TestCluster.Send(a, 2);
        a.Store.AutoDurable = false;
        await a.AdvanceVersionAsync();
        a.Store.Crash();
        await a.DisposeAsync();

        var a2 = MemoryStateObject.Create(1, a.Store);
        await a2.ConnectAsync(coordinator);

        Assert.Equal([1L], a2.RestoredVersions);
        Assert.Equal([1L], a2.History);
        Assert.Equal(2, a2.CurrentVersion);
        Assert.Equal(1, a2.WorldLine);
    }

    [Fact]
    public async Task Restart_OldIncarnationStillRunning_IsFaultedAsSuperseded()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var a2 = MemoryStateObject.Create(1, a.Store);
        await a2.ConnectAsync(coordinator);

        await Assert.ThrowsAsync<DseFaultedException>(() => a.RefreshAsync().AsTask());
        Assert.Throws<DseFaultedException>(() => a.TryStartLocalAction());
    }

    [Fact]
    public async Task TwoFailures_AppliedInWorldLineOrder()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        var c = await TestCluster.ConnectAsync(coordinator, 3);
        var seen = new List<long>();
        b.OnRestore = v => seen.Add(b.WorldLine);
        a.Store.AutoDurable = false;
        await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 10);
        await b.AdvanceVersionAsync();

        await a.DisposeAsync();
        a.Store.Crash();
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(coordinator);
        await c.DisposeAsync();
        await MemoryStateObject.Create(3, c.Store).ConnectAsync(coordinator);

        await b.RefreshAsync();

        Assert.Equal(2, b.WorldLine);
        Assert.Equal([0L], seen);    // restored once, while still in world-line 0, for decision 1; kept through decision 2
    }

    [Fact]
    public async Task Refresh_DecisionNoLongerRetained_FaultsInsteadOfSkippingIt()
    {
        var coordinator = new ClusterCoordinator(new ClusterCoordinatorOptions { MaxRetainedDecisions = 1 });
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(coordinator);
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(coordinator);

        var ex = await Assert.ThrowsAsync<DseFaultedException>(() => b.RefreshAsync().AsTask());
        Assert.Contains("missed the rollback decision of world-line 1", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Rollback_NeverGoesBelowCommittedVersion()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 2);
        await TestCluster.SettleAsync(a, b);
        long committedB = b.CommittedVersion;
        Assert.True(committedB >= 1);

        // New speculative dependency of b on a, then a crashes losing it.
        a.Store.AutoDurable = false;
        await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 3), 4);
        await b.AdvanceVersionAsync();
        a.Store.Crash();
        await a.DisposeAsync();
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(coordinator);
        await b.RefreshAsync();

        Assert.Equal(committedB, b.RestoredVersions[^1]);
        Assert.Equal([2L], b.History);
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
}
