using Dse.Coordinator.Tests.Infrastructure;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator.Tests;

/// <summary>
/// The coordinator over gRPC end to end: GrpcCoordinatorClient against the service on 127.0.0.1, with an in-memory
/// log. Every answer is compared with the coordinator's own state in the server process.
/// </summary>
public sealed class GrpcCoordinatorRoundTripTests
{
    // The service's log events (CoordinatorServiceMessages) that tests wait for.
    private const int LongPollExpired = 3203;
    private const int LongPollWaiting = 3204;
    private const int ParticipantRemoved = 3206;
    private const int Connecting = 3209;

    /// <summary>Turns a log event that never comes into a failure instead of a hang.</summary>
    private static readonly TimeSpan LogEventGuard = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task ConnectReportRestart_OverGrpc_SameAnswersAsTheCoordinator()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));
        var client = server.CreateClient();

        var first = await client.ConnectAsync(new ConnectRequest(1, []));
        Assert.False(first.IsRestart);
        Assert.False(first.MustRetry);
        Assert.Equal(0, first.RestoreVersion);
        var second = await client.ConnectAsync(new ConnectRequest(2, []));
        Assert.False(second.IsRestart);
        Assert.Equal(0, second.RestoreVersion);

        Assert.Equal(ReportOutcome.Accepted, await client.ReportPersistedAsync(1, new VersionReport(1, 0, [])));
        Assert.Equal(ReportOutcome.Accepted, await client.ReportPersistedAsync(2, new VersionReport(1, 0, [new Dependency(1, 1)])));
        Assert.Equal(ReportOutcome.Duplicate, await client.ReportPersistedAsync(2, new VersionReport(1, 0, [new Dependency(1, 1)])));

        // Participant 2's version 2 depends on a version of 1 that 1 never reported.
        Assert.Equal(ReportOutcome.Accepted, await client.ReportPersistedAsync(2, new VersionReport(2, 0, [new Dependency(1, 2)])));
        await client.HeartbeatAsync(1);

        var boundary = await client.GetStateAsync();
        Assert.Equal(1, boundary.CommittedVersion(1));
        Assert.Equal(1, boundary.CommittedVersion(2));
        StateAssert.Same(server.Coordinator.State, boundary);

        // Participant 1 restarts with version 1 in storage: the decision cuts 2 back to 1.
        var restart = await client.ConnectAsync(new ConnectRequest(1, [new VersionReport(1, 0, [])]));
        Assert.True(restart.IsRestart);
        Assert.False(restart.MustRetry);
        Assert.Equal(1, restart.WorldLine);
        Assert.Equal(1, restart.RestoreVersion);
        var decision = Assert.Single(restart.State.Decisions);
        Assert.Equal(RollbackReason.Restart, decision.Reason);
        Assert.Equal(1, decision.FailedObjectId);
        Assert.Equal(1, decision.CutFor(2));
        StateAssert.Same(server.Coordinator.State, restart.State);

        await client.AcknowledgeRollbackAsync(2, 1, 1);
        Assert.Equal(ReportOutcome.Stale, await client.ReportPersistedAsync(2, new VersionReport(2, 0, [new Dependency(1, 2)])));
        Assert.Equal(ReportOutcome.Accepted, await client.ReportPersistedAsync(1, new VersionReport(2, 1, [])));
        StateAssert.Same(server.Coordinator.State, await client.GetStateAsync());
        Assert.Null(server.Coordinator.Fault);
    }

    [Fact]
    public async Task ResyncAfterCoordinatorRestart_OverGrpc_EndsRecovery()
    {
        var store = new InMemoryCoordinatorLogStore();
        ClusterState before;
        await using (var first = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store)))
        {
            var client = first.CreateClient();
            await client.ConnectAsync(new ConnectRequest(7, []));
            await client.ReportPersistedAsync(7, new VersionReport(1, 0, []));
            before = await client.GetStateAsync();
            Assert.Equal(1, before.CommittedVersion(7));
        }

        await using var second = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));
        var again = second.CreateClient();
        var recovering = await again.GetStateAsync();
        Assert.True(recovering.IsRecovering);
        Assert.Equal(before.Incarnation + 1, recovering.Incarnation);
        Assert.True(recovering.Epoch > before.Epoch);

        var resynced = await again.ResyncAsync(new ResyncRequest(7, 0, [new VersionReport(2, 0, [])], new Dictionary<long, long> { [7] = 1 }));
        Assert.False(resynced.IsRecovering);
        Assert.True(resynced.CommittedVersion(7) >= 1);
        StateAssert.Same(second.Coordinator.State, resynced);
    }

    [Fact]
    public async Task WaitForChangeAsync_StateChanges_ReturnsTheNewState()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));
        var follower = server.CreateClient();
        var known = await follower.GetStateAsync();

        var waiting = follower.WaitForChangeAsync(known.Epoch).AsTask();
        await server.CreateClient().ConnectAsync(new ConnectRequest(3, []));

        var changed = await waiting;
        Assert.True(changed.Epoch > known.Epoch);
        Assert.Equal(0, changed.CommittedVersion(3));
        StateAssert.Same(server.Coordinator.State, changed);
    }

    [Fact]
    public async Task WaitForChange_NothingChangesWithinTheCap_ServerAnswersWithTheCurrentState()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store), o => o.LongPollTimeout = TimeSpan.FromMilliseconds(20));
        long known = server.Coordinator.State.Epoch;

        // One raw poll: the client would poll again, the server itself answers unchanged once its cap is over.
        var response = await RawCalls.WaitForChangeAsync(server.Channel, new Wire.WaitForChangeRequest { KnownEpoch = known });

        Assert.Equal(known, response.State.Epoch);
        Assert.Equal(known, server.Coordinator.State.Epoch);
    }

    [Fact]
    public async Task WaitForChangeAsync_SeveralPollsWithoutChange_KeepsPollingUntilTheStateChanges()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store), o => o.LongPollTimeout = TimeSpan.FromMilliseconds(20));
        var follower = server.CreateClient();
        long known = (await follower.GetStateAsync()).Epoch;

        var waiting = follower.WaitForChangeAsync(known).AsTask();
        await server.Logs.WaitForCountAsync(LongPollExpired, 2).WaitAsync(LogEventGuard);
        Assert.False(waiting.IsCompleted);

        await server.CreateClient().ConnectAsync(new ConnectRequest(5, []));
        var changed = await waiting;
        Assert.True(changed.Epoch > known);
    }

    [Fact]
    public async Task WaitForChangeAsync_HostStopsDuringThePoll_UnavailableAtOnce()
    {
        var store = new InMemoryCoordinatorLogStore();
        // A cap far beyond the test's run: only the host's stop can end this poll in time.
        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store), o => o.LongPollTimeout = TimeSpan.FromMinutes(10));
        var follower = server.CreateClient();
        long known = (await follower.GetStateAsync()).Epoch;

        var poll = follower.WaitForChangeAsync(known).AsTask();
        await server.Logs.WaitForAsync(LongPollWaiting).WaitAsync(LogEventGuard);
        await server.StopAsync();

        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => poll);
        Assert.Equal(CoordinatorErrorCode.Unavailable, error.Code);
        Assert.Contains("shutting down", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task WaitForChangeAsync_Cancelled_ThrowsOperationCanceled()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));
        var follower = server.CreateClient();
        long known = (await follower.GetStateAsync()).Epoch;
        using var cancel = new CancellationTokenSource();

        var waiting = follower.WaitForChangeAsync(known, cancel.Token).AsTask();
        await cancel.CancelAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => waiting);
    }

    [Fact]
    public async Task ResyncAsync_ListingOverGrpcDefault4MB_ServedUnderTheDefaultLimit()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using (var first = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store)))
        {
            await first.CreateClient().ConnectAsync(new ConnectRequest(1, []));
        }

        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));
        var client = server.CreateClient();

        // A long outage's backlog: 64,000 durable versions with a 16-peer fragment each, about 8 MB on the wire.
        var fragment = Enumerable.Range(100, 16).Select(i => new Dependency(i, 1_000_000 + i)).ToArray();
        var versions = Enumerable.Range(1, 64_000).Select(v => new VersionReport(v, 0, fragment)).ToArray();
        var request = new ResyncRequest(1, 0, versions, new Dictionary<long, long>());
        Assert.True(WireSize(request) > 8 * 1024 * 1024, $"The resync is {WireSize(request)} bytes on the wire, not over 8 MB.");

        var state = await client.ResyncAsync(request);

        Assert.False(state.IsRecovering);
        StateAssert.Same(server.Coordinator.State, state);
    }

    [Fact]
    public async Task RemoveParticipantAsync_ParticipantGoneDuringRecovery_EndsRecoveryWithoutIt()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using (var first = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store)))
        {
            var client = first.CreateClient();
            await client.ConnectAsync(new ConnectRequest(1, []));
            await client.ConnectAsync(new ConnectRequest(2, []));
        }

        await using var second = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));
        var admin = second.CreateClient();
        var afterResync = await admin.ResyncAsync(new ResyncRequest(1, 0, [], new Dictionary<long, long>()));
        Assert.True(afterResync.IsRecovering, "Participant 2 has not answered: recovery waits for it.");

        Assert.True(await admin.RemoveParticipantAsync(2));
        await second.Logs.WaitForAsync(ParticipantRemoved).WaitAsync(LogEventGuard);

        var state = await admin.GetStateAsync();
        Assert.False(state.IsRecovering);
        StateAssert.Same(second.Coordinator.State, state);
        Assert.False(await admin.RemoveParticipantAsync(2));
        var refused = await Assert.ThrowsAsync<DseCoordinatorException>(() => admin.HeartbeatAsync(2).AsTask());
        Assert.Equal(CoordinatorErrorCode.Removed, refused.Code);
    }

    [Fact]
    public async Task ConnectAsync_HostStopsDuringColdStart_UnavailableAtOnce()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store), o => o.ExpectedParticipants = [1, 2]);
        var client = server.CreateClient();

        // Participant 2 never comes: only the host's stop can end this connect before the shutdown timeout (30 s).
        var pending = client.ConnectAsync(new ConnectRequest(1, [])).AsTask();
        await server.Logs.WaitForAsync(Connecting).WaitAsync(LogEventGuard);
        await server.StopAsync();

        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => pending);
        Assert.Equal(CoordinatorErrorCode.Unavailable, error.Code);
        Assert.Contains("shutting down", error.Message, StringComparison.Ordinal);
        Assert.Equal(nameof(CoordinatorErrorCode.Unavailable), Assert.IsType<global::Grpc.Core.RpcException>(error.InnerException).Trailers.GetValue("dse-error-code"));
    }

    /// <summary>The size of the request as GrpcCoordinatorClient sends it.</summary>
    private static int WireSize(ResyncRequest request)
    {
        var wire = new Wire.ResyncRequest { ObjectId = request.ObjectId, WorldLine = request.WorldLine };
        foreach (var report in request.DurableVersions)
        {
            var entry = new Wire.VersionReport { Version = report.Version, WorldLine = report.WorldLine };
            foreach (var d in report.Dependencies)
            {
                entry.Dependencies.Add(new Wire.ObjectVersion { ObjectId = d.ObjectId, Version = d.Version });
            }

            wire.DurableVersions.Add(entry);
        }

        return wire.CalculateSize();
    }
}
