using Dse.Testing;

namespace Dse.Tests;

/// <summary>
/// The header rules (docs/libdse.md): a receiver refuses a header that names a participant the coordinator does not know,
/// a version implausibly far ahead or a world-line the coordinator has not decided; a refused header changes nothing and
/// the receiver goes on committing. A persisted version the coordinator refuses is lost at restart, as a crash loses one.
/// </summary>
[Trait("Category", "Security")]
public sealed class HeaderRulesTests
{
    [Theory]
    [InlineData(-5L)]
    [InlineData(long.MinValue)]
    public void Parse_NegativeParticipantId_IsMalformed(long objectId)
    {
        var origin = DseHeader.FromOrigin(1, 0, 1).ToArray();
        BitConverter.TryWriteBytes(origin.AsSpan(DseHeader.PrefixLength), objectId);
        Assert.False(DseHeader.TryParse(origin, out _, out string error));
        Assert.Contains("negative participant id", error);

        var set = DseHeader.FromDependencies(0, [new Dependency(2, 1), new Dependency(objectId, 1)]).ToArray();
        Assert.False(DseHeader.TryParse(set, out _, out error));
        Assert.Contains("entry 1 names a negative participant id", error);
    }

    [Fact]
    public async Task Receive_HeaderNamingUnknownParticipant_IsRefusedAndChangesNothing()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        long version = a.CurrentVersion;

        var error = await Assert.ThrowsAsync<DseHeaderRejectedException>(() => a.StartActionAsync(DseHeader.FromOrigin(99, 0, 1)).AsTask());
        Assert.Contains("participant 99", error.Message);

        // Refused before anything started: no action is open, no version moved, and the object still commits.
        Assert.True(a.TryStartLocalAction());
        a.Record(1);
        a.EndAction();
        Assert.Equal(version, a.CurrentVersion);
        await TestCluster.SettleAsync(a);
        Assert.True(a.ClusterView.CommittedVersion(1) >= version);
    }

    [Fact]
    public async Task Receive_FromParticipantThatConnectedAfterTheView_IsAcceptedAfterOneRefresh()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        Assert.False(a.ClusterView.Committed.ContainsKey(2));

        Assert.True(await TestCluster.ReceiveAsync(a, TestCluster.Send(b, 7), 8));
        await TestCluster.SettleAsync(a, b);
        Assert.Equal([8L], a.History);
    }

    [Fact]
    public async Task Receive_VersionBeyondTheLead_IsRefusedAndTheVersionStays()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        await TestCluster.SettleAsync(a, b);
        long version = a.CurrentVersion;

        var error = await Assert.ThrowsAsync<DseHeaderRejectedException>(() => a.StartActionAsync(DseHeader.FromOrigin(2, 0, long.MaxValue / 2)).AsTask());
        Assert.Contains("MaxVersionLead", error.Message);
        Assert.Equal(version, a.CurrentVersion);

        // Within the lead, a version ahead is commit ordering as always.
        Assert.True(await TestCluster.ReceiveAsync(a, DseHeader.FromOrigin(2, 0, version + 10), 3));
        Assert.Equal(version + 10, a.CurrentVersion);
    }

    [Fact]
    public async Task Receive_NearFutureVersionOfAnIdleParticipant_CommitsOnceThatParticipantPersistsUpToIt()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        await TestCluster.SettleAsync(a, b);

        // Within the lead, but a number idle B never reached: A's version depends on B persisting that far.
        long forged = b.CurrentVersion + 50;
        Assert.True(await TestCluster.ReceiveAsync(a, DseHeader.FromOrigin(2, 0, forged), 1));
        long aVersion = a.CurrentVersion;
        await a.AdvanceVersionAsync();
        await a.RefreshAsync();
        Assert.True(a.ClusterView.CommittedVersion(1) < aVersion);
        Assert.Equal(forged, coordinator.State.Wanted[2]);

        // B follows the coordinator, sees the wanted number and persists up to it; A's version then commits.
        await b.RefreshAsync();
        Assert.True(b.CurrentVersion > forged);
        await a.RefreshAsync();
        Assert.True(a.ClusterView.CommittedVersion(1) >= aVersion);
        Assert.True(a.ClusterView.CommittedVersion(2) >= forged);
        Assert.False(a.ClusterView.Wanted.ContainsKey(2));
    }

    [Fact]
    public async Task Receive_WorldLineTheCoordinatorNeverDecided_IsRefusedInsteadOfWaiting()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        await TestCluster.SettleAsync(a, b);

        var error = await Assert.ThrowsAsync<DseHeaderRejectedException>(() => a.StartActionAsync(DseHeader.FromOrigin(2, 7, 1)).AsTask()).WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Contains("world-line 7", error.Message);
        Assert.Equal(0, a.WorldLine);
    }

    [Fact]
    public async Task Restart_PersistedVersionTheCoordinatorWouldRefuse_IsLostAsInACrash()
    {
        var coordinator = new ClusterCoordinator();
        var store = new MemoryVersionStore();
        var a = await TestCluster.ConnectAsync(coordinator, 1, store);
        Assert.True(a.TryStartLocalAction());
        a.Record(1);
        a.EndAction();
        await TestCluster.SettleAsync(a);
        long good = store.Durable.Keys.Max();
        await a.DisposeAsync();

        // A version persisted with a dependency no coordinator accepts (as an older build let a forged header in), and one after it.
        store.Durable[good + 1] = new MemoryVersionStore.Snapshot(VersionMetadata.Encode(0, [new Dependency(-5, 1)]), [1, 2]);
        store.Durable[good + 2] = new MemoryVersionStore.Snapshot(VersionMetadata.Encode(0, []), [1, 2, 3]);

        var logs = new LogCapture();
        var restarted = new MemoryStateObject(new DseOptions { ObjectId = 1, RunBackgroundTasks = false, LoggerFactory = logs }, store);
        await restarted.ConnectAsync(coordinator);

        Assert.Equal([1L], restarted.History);
        Assert.DoesNotContain(store.Durable.Keys, v => v > good && v <= good + 2);
        var warning = Assert.Single(logs.Entries, e => e.EventId.Id == 1011);
        Assert.Contains($"from {good + 1} on", warning.Message);
        Assert.Contains("participant -5", warning.Message);

        // Numbers of the lost versions are not reused, and the object commits again.
        Assert.True(restarted.CurrentVersion > good + 2);
        Assert.True(restarted.TryStartLocalAction());
        restarted.Record(4);
        restarted.EndAction();
        await TestCluster.SettleAsync(restarted);
        Assert.True(restarted.ClusterView.CommittedVersion(1) > good + 2);
    }

    [Fact]
    public async Task Report_CredentialRefused_FaultsWithTheReasonInsteadOfRetryingForever()
    {
        var fault = await FaultOfARefusedReportAsync(CoordinatorErrorCode.CredentialRefused, "PERMISSION_DENIED: the token does not speak for participant 1");
        Assert.Contains("the token does not speak for participant 1", fault.Message);
        Assert.DoesNotContain("discards", fault.Message);
    }

    [Fact]
    public async Task Report_RefusedAsInvalid_FaultsWithTheReasonInsteadOfRetryingForever()
    {
        var fault = await FaultOfARefusedReportAsync(CoordinatorErrorCode.InvalidRequest, "dependencies[0].object_id is -5");
        Assert.Contains("refused the report of version 1", fault.Message);
        Assert.Contains("restart it on the same storage", fault.Message);
    }

    /// <summary>Persists version 1 of an object whose coordinator refuses every report with <paramref name="code"/>; returns the fault the next refresh shows.</summary>
    private static async Task<DseFaultedException> FaultOfARefusedReportAsync(CoordinatorErrorCode code, string reason)
    {
        var a = MemoryStateObject.Create(1);
        await a.ConnectAsync(new RefusingReports(new ClusterCoordinator(), code, reason));
        Assert.True(a.TryStartLocalAction());
        a.Record(1);
        a.EndAction();
        await a.AdvanceVersionAsync();

        await Assert.ThrowsAsync<DseFaultedException>(() => a.RefreshAsync().AsTask());
        return Assert.IsType<DseFaultedException>(a.Fault);
    }

    /// <summary>A coordinator that refuses every report for good, as one does a fragment it cannot accept or a credential it does not know.</summary>
    private sealed class RefusingReports(ClusterCoordinator inner, CoordinatorErrorCode code, string reason) : IDseCoordinator
    {
        public ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default) => inner.ConnectAsync(request, cancellationToken);

        public ValueTask<ReportOutcome> ReportPersistedAsync(long objectId, VersionReport report, CancellationToken cancellationToken = default) =>
            ValueTask.FromException<ReportOutcome>(new DseCoordinatorException(code, reason));

        public ValueTask AcknowledgeRollbackAsync(long objectId, long worldLine, long keptThrough, CancellationToken cancellationToken = default) =>
            inner.AcknowledgeRollbackAsync(objectId, worldLine, keptThrough, cancellationToken);

        public ValueTask<ClusterState> ResyncAsync(ResyncRequest request, CancellationToken cancellationToken = default) => inner.ResyncAsync(request, cancellationToken);

        public ValueTask HeartbeatAsync(long objectId, CancellationToken cancellationToken = default) => inner.HeartbeatAsync(objectId, cancellationToken);

        public ValueTask<ClusterState> GetStateAsync(CancellationToken cancellationToken = default) => inner.GetStateAsync(cancellationToken);

        public ValueTask<ClusterState> WaitForChangeAsync(long knownEpoch, CancellationToken cancellationToken = default) => inner.WaitForChangeAsync(knownEpoch, cancellationToken);
    }
}
