namespace Dse.Tests;

/// <summary>Regression tests for the defects the review of the journaled coordinator found (each failed before its fix).</summary>
public class CoordinatorReviewRegressionTests
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

    // R1: the last recovery answer is a connect. The MustRetry answer used to carry the state published by the end of
    // recovery, so StateObject.ConnectAsync waited for a change after it, and nothing else published.
    [Fact]
    public async Task R1_SingleParticipant_RestartsWhileCoordinatorDown_ConnectAsyncCompletes()
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
    public async Task R1b_IdleLiveParticipantResyncs_RestartedOneAnswersLast_ConnectAsyncCompletes()
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

    // R2: PublishView used to merge the old incarnation's committed floors only into the FIRST state of a new
    // incarnation; a second state of that incarnation (still recovering, floors not yet raised) replaced the view.
    private static async Task<(CoordinatorProxy Proxy, Journal Journal, MemoryStateObject A, MemoryStateObject B)> SetupR2()
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
    public async Task R2a_ViewNeverGoesBack_AcrossTwoStatesOfARecoveringIncarnation()
    {
        var (proxy, journal, a, b) = await SetupR2();
        proxy.Current = await Open(journal);

        a.PublishView(proxy.Current.State);   // first state of incarnation 2: merged, b:1 kept
        Assert.Equal(1, a.ClusterView.CommittedVersion(2));
        await b.RefreshAsync();               // b resyncs; the coordinator publishes again, still recovering
        Assert.True(proxy.Current.State.IsRecovering);
        a.PublishView(proxy.Current.State);   // e.g. an action's RefreshAsync racing the follow loop

        Assert.Equal(1, a.ClusterView.CommittedVersion(2));   // docs: "their views never go back"
    }

    [Fact]
    public async Task R2b_RegressedViewResynced_CommittedVersionIsRolledBackByALaterRestart()
    {
        var (proxy, journal, a, b) = await SetupR2();
        proxy.Current = await Open(journal);

        a.PublishView(proxy.Current.State);
        await b.RefreshAsync();
        a.PublishView(proxy.Current.State);   // the interleaving of R2a
        await a.RefreshAsync();               // a resyncs with the regressed view; recovery ends
        Assert.False(proxy.Current.State.IsRecovering);

        // Incarnation 1 published b:1 as committed (and a saw it); incarnation 2 must never go below it.
        Assert.True(proxy.Current.State.CommittedVersion(2) >= 1, $"boundary went back: b committed {proxy.Current.State.CommittedVersion(2)}");
    }

    [Fact]
    public async Task R2c_Control_WithoutTheSecondPublish_FloorsSurvive()
    {
        var (proxy, journal, a, b) = await SetupR2();
        proxy.Current = await Open(journal);

        a.PublishView(proxy.Current.State);
        await b.RefreshAsync();
        await a.RefreshAsync();
        Assert.False(proxy.Current.State.IsRecovering);
        Assert.True(proxy.Current.State.CommittedVersion(2) >= 1);
    }

    [Fact]
    public async Task R2d_RegressedView_ThenRestartOfB_RollsBackBsCommittedVersion()
    {
        var (proxy, journal, a, b) = await SetupR2();
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

    // R2e: public API only. One transient failure of a's resync RPC is enough.
    [Fact]
    public async Task R2e_TransientResyncFailure_LosesTheFloors_AndARestartRollsBackCommittedState()
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
        await a.RefreshAsync();    // a retries: the new state replaced the merged view, and a resyncs without b:1
        Assert.False(proxy.Current.State.IsRecovering);

        await b.DisposeAsync();
        var b2 = MemoryStateObject.Create(2, b.Store);
        await b2.ConnectAsync(proxy);
        var decision = proxy.Current.State.Decisions[^1];
        Assert.True(decision.CutFor(2) >= 1, $"restart of b rolled back b:1, which incarnation 1 committed and a saw committed: {decision}");
    }

    private sealed class FailingJournal : IClusterJournal
    {
        public List<ClusterJournalEntry> Entries { get; } = [];

        public int FailAppendNumber;   // 1-based; 0: never

        public bool DurableDespiteFailure;

        private int _appends;

        public ValueTask AppendAsync(ClusterJournalEntry entry, CancellationToken cancellationToken = default)
        {
            if (++_appends == FailAppendNumber)
            {
                if (DurableDespiteFailure)
                {
                    Entries.Add(entry);
                }

                return ValueTask.FromException(new IOException("coordinator crashed during the append"));
            }

            Entries.Add(entry);
            return ValueTask.CompletedTask;
        }
    }

    // R3: a coordinator crash while journaling a cold start must leave either no cold start (the next start is a cold
    // start again) or all of it (the next start filters against its decision); never registrations without the closure.
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task R3_CrashDuringColdStartJournaling_NeverRestoresStateThatDependsOnLostState(bool appendBecameDurable)
    {
        var options = new ClusterCoordinatorOptions { ExpectedParticipants = [1, 2] };
        var a = new ConnectRequest(1, []);                                                   // a lost its version 1
        var b = new ConnectRequest(2, [new VersionReport(1, 0, [new Dependency(1, 1)])]);   // b:1 observed a:1

        var journal = new FailingJournal { FailAppendNumber = 2, DurableDespiteFailure = appendBecameDurable };   // 1: started, 2: the cold start
        var first = await ClusterCoordinator.OpenAsync(journal, [], options);
        var ja = first.ConnectAsync(a).AsTask();
        await Assert.ThrowsAsync<DseCoordinatorException>(() => first.ConnectAsync(b).AsTask());
        await Assert.ThrowsAnyAsync<Exception>(() => ja);

        var second = await ClusterCoordinator.OpenAsync(journal, [.. journal.Entries], options);
        var ra = second.ConnectAsync(a).AsTask();
        var rb = await second.ConnectAsync(b);
        if (appendBecameDurable)
        {
            // The cold start happened: both answer the recovery, then connect again as restarts.
            Assert.True((await ra).MustRetry);
            Assert.True(rb.MustRetry);
            ra = second.ConnectAsync(a).AsTask();
            rb = await second.ConnectAsync(b);
        }

        Assert.Equal(0, rb.RestoreVersion);   // b:1 depends on a:1, which no storage holds
        Assert.Equal(0, (await ra).RestoreVersion);
    }
}
