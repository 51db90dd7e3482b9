namespace Dse.Tests;

/// <summary>
/// A new coordinator incarnation (a restart on the same journal) and the participants around it: a participant that
/// restarts while it recovers still connects, and the committed boundary a StateObject has seen never goes back (the
/// new incarnation keeps the old one's committed floors through every state it publishes while recovering, and through
/// a resync that failed once), so a later restart never rolls back what the old incarnation committed.
/// </summary>
public class CoordinatorIncarnationTests
{
    private sealed class Journal : IClusterJournal
    {
        public List<ClusterJournalEntry> Entries { get; } = [];

        public ValueTask AppendAsync(ClusterJournalEntry entry, CancellationToken cancellationToken = default)
        {
            Entries.Add(entry);
            return ValueTask.CompletedTask;
        }
    }

    private static Task<ClusterCoordinator> Open(Journal j) => ClusterCoordinator.OpenAsync(j, [.. j.Entries]);

    // The last answer the recovery waits for is a connect (the only participant restarts with the coordinator): its
    // ConnectAsync must complete without waiting for a state change that nothing else would publish.
    [Fact]
    public async Task ConnectAsync_OnlyParticipantRestartsWithTheCoordinator_Completes()
    {
        var journal = new Journal();
        var first = await Open(journal);
        var store = new MemoryVersionStore();
        var a = MemoryStateObject.Create(1, store);
        await a.ConnectAsync(first);
        Assert.True(a.TryStartLocalAction());
        a.Record(1);
        a.EndAction();
        await a.AdvanceVersionAsync();

        // The coordinator and the participant crash together.
        var second = await Open(journal);
        var again = MemoryStateObject.Create(1, store);
        await again.ConnectAsync(second).AsTask().WaitAsync(TimeSpan.FromSeconds(5));
        Assert.True(again.IsConnected);
    }

    [Fact]
    public async Task ConnectAsync_RestartedParticipantAnswersTheRecoveryLast_Completes()
    {
        var journal = new Journal();
        var proxy = new CoordinatorProxy(await Open(journal));
        var a = MemoryStateObject.Create(1);
        var bStore = new MemoryVersionStore();
        var b = MemoryStateObject.Create(2, bStore);
        await a.ConnectAsync(proxy);
        await b.ConnectAsync(proxy);
        Assert.True(await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 2));
        await TestCluster.SettleAsync(a, b);

        proxy.Current = await Open(journal);   // coordinator restarts; b crashes meanwhile
        await a.RefreshAsync();                  // a (alive, idle) resyncs
        Assert.True(proxy.Current.State.IsRecovering);
        var b2 = MemoryStateObject.Create(2, bStore);
        await b2.ConnectAsync(proxy).AsTask().WaitAsync(TimeSpan.FromSeconds(5));
    }

    // a and b both commit version 1 in the first incarnation; a sees it, b does not. Every state a new incarnation
    // publishes while recovering (floors not yet raised) must merge into a's view instead of replacing it.
    private static async Task<(CoordinatorProxy Proxy, Journal Journal, MemoryStateObject A, MemoryStateObject B)> CommitBothThenOnlyASeesItAsync()
    {
        var journal = new Journal();
        var proxy = new CoordinatorProxy(await Open(journal));
        var a = MemoryStateObject.Create(1);
        var b = MemoryStateObject.Create(2);
        await a.ConnectAsync(proxy);
        await b.ConnectAsync(proxy);

        Assert.True(await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 2));   // b's version 1 observes a's 1
        await b.AdvanceVersionAsync();   // persists and reports b:1 (waits for a:1)
        await a.AdvanceVersionAsync();   // persists and reports a:1: both commit
        await a.RefreshAsync();          // a sees a:1, b:1 committed and prunes its record of a:1; b never refreshes
        Assert.Equal(1, proxy.Current.State.CommittedVersion(2));
        Assert.Equal(1, a.ClusterView.CommittedVersion(2));
        Assert.Equal(0, b.ClusterView.CommittedVersion(2));
        return (proxy, journal, a, b);
    }

    [Fact]
    public async Task PublishView_TwoStatesOfARecoveringIncarnation_ViewNeverGoesBack()
    {
        var (proxy, journal, a, b) = await CommitBothThenOnlyASeesItAsync();
        proxy.Current = await Open(journal);

        a.PublishView(proxy.Current.State);   // first state of incarnation 2: merged, b:1 kept
        Assert.Equal(1, a.ClusterView.CommittedVersion(2));
        await b.RefreshAsync();               // b resyncs; the coordinator publishes again, still recovering
        Assert.True(proxy.Current.State.IsRecovering);
        a.PublishView(proxy.Current.State);   // e.g. an action's RefreshAsync racing the follow loop

        Assert.Equal(1, a.ClusterView.CommittedVersion(2));   // docs: "their views never go back"
    }

    [Fact]
    public async Task RefreshAsync_ResyncAfterASecondRecoveringState_BoundaryKeepsWhatTheOldIncarnationCommitted()
    {
        var (proxy, journal, a, b) = await CommitBothThenOnlyASeesItAsync();
        proxy.Current = await Open(journal);

        a.PublishView(proxy.Current.State);
        await b.RefreshAsync();
        a.PublishView(proxy.Current.State);   // the second recovering state reaches a before its resync
        await a.RefreshAsync();               // a resyncs with its view; recovery ends
        Assert.False(proxy.Current.State.IsRecovering);

        // Incarnation 1 published b:1 as committed (and a saw it); incarnation 2 must never go below it.
        Assert.True(proxy.Current.State.CommittedVersion(2) >= 1, $"boundary went back: b committed {proxy.Current.State.CommittedVersion(2)}");
    }

    [Fact]
    public async Task RefreshAsync_ResyncAfterOneRecoveringState_BoundaryKeepsWhatTheOldIncarnationCommitted()
    {
        var (proxy, journal, a, b) = await CommitBothThenOnlyASeesItAsync();
        proxy.Current = await Open(journal);

        a.PublishView(proxy.Current.State);
        await b.RefreshAsync();
        await a.RefreshAsync();
        Assert.False(proxy.Current.State.IsRecovering);
        Assert.True(proxy.Current.State.CommittedVersion(2) >= 1);
    }

    [Fact]
    public async Task ConnectAsync_RestartAfterASecondRecoveringState_KeepsWhatTheOldIncarnationCommitted()
    {
        var (proxy, journal, a, b) = await CommitBothThenOnlyASeesItAsync();
        proxy.Current = await Open(journal);
        a.PublishView(proxy.Current.State);
        await b.RefreshAsync();
        a.PublishView(proxy.Current.State);
        await a.RefreshAsync();

        await b.DisposeAsync();
        var b2 = MemoryStateObject.Create(2, b.Store);
        await b2.ConnectAsync(proxy);
        var decision = proxy.Current.State.Decisions[^1];
        Assert.True(decision.CutFor(2) >= 1, $"restart of b rolled back its version 1, committed by incarnation 1: {decision}");
    }

    private sealed class FlakyResync(CoordinatorProxy inner) : IDseCoordinator
    {
        public int FailResyncs;

        public ValueTask<ConnectResponse> ConnectAsync(ConnectRequest r, CancellationToken ct = default) => inner.ConnectAsync(r, ct);

        public ValueTask<ReportOutcome> ReportPersistedAsync(long id, VersionReport r, CancellationToken ct = default) => inner.ReportPersistedAsync(id, r, ct);

        public ValueTask AcknowledgeRollbackAsync(long id, long wl, long k, CancellationToken ct = default) => inner.AcknowledgeRollbackAsync(id, wl, k, ct);

        public ValueTask<ClusterState> ResyncAsync(ResyncRequest r, CancellationToken ct = default) =>
            FailResyncs-- > 0 ? ValueTask.FromException<ClusterState>(new IOException("transient: deadline exceeded")) : inner.ResyncAsync(r, ct);

        public ValueTask HeartbeatAsync(long id, CancellationToken ct = default) => inner.HeartbeatAsync(id, ct);

        public ValueTask<ClusterState> GetStateAsync(CancellationToken ct = default) => inner.GetStateAsync(ct);

        public ValueTask<ClusterState> WaitForChangeAsync(long e, CancellationToken ct = default) => inner.WaitForChangeAsync(e, ct);
    }

    // Public API only: one transient failure of a's resync call must not lose the floors a merged into its view.
    [Fact]
    public async Task ConnectAsync_RestartAfterATransientResyncFailure_KeepsWhatTheOldIncarnationCommitted()
    {
        var journal = new Journal();
        var proxy = new CoordinatorProxy(await Open(journal));
        var flaky = new FlakyResync(proxy);
        var a = MemoryStateObject.Create(1);
        var b = MemoryStateObject.Create(2);
        await a.ConnectAsync(flaky);
        await b.ConnectAsync(proxy);
        Assert.True(await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 2));
        await b.AdvanceVersionAsync();
        await a.AdvanceVersionAsync();
        await a.RefreshAsync();
        Assert.Equal(1, a.ClusterView.CommittedVersion(2));   // a saw b:1 committed (could have passed a barrier on it)

        proxy.Current = await Open(journal);
        flaky.FailResyncs = 1;
        await Assert.ThrowsAsync<IOException>(() => a.RefreshAsync().AsTask());   // view merged, resync failed
        Assert.Equal(1, a.ClusterView.CommittedVersion(2));
        await b.RefreshAsync();    // b resyncs: the coordinator publishes a new recovering state
        await a.RefreshAsync();    // a retries its resync: the view it resyncs with must still hold b:1 committed
        Assert.False(proxy.Current.State.IsRecovering);

        await b.DisposeAsync();
        var b2 = MemoryStateObject.Create(2, b.Store);
        await b2.ConnectAsync(proxy);
        var decision = proxy.Current.State.Decisions[^1];
        Assert.True(decision.CutFor(2) >= 1, $"restart of b rolled back b:1, which incarnation 1 committed and a saw committed: {decision}");
    }
}
