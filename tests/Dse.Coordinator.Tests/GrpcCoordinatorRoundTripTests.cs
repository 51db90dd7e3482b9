using Dse.Coordinator.Tests.Infrastructure;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator.Tests;

/// <summary>
/// The coordinator over gRPC end to end: GrpcCoordinatorClient against the service on 127.0.0.1, with an in-memory
/// log. Every answer is compared with the coordinator's own state in the server process.
/// </summary>
public sealed class GrpcCoordinatorRoundTripTests
{
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
        using var expired = new SignalingLoggerProvider(awaitedEventId: 3203);
        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store), o => o.LongPollTimeout = TimeSpan.FromMilliseconds(20), expired);
        var follower = server.CreateClient();
        long known = (await follower.GetStateAsync()).Epoch;

        var waiting = follower.WaitForChangeAsync(known).AsTask();
        await expired.WaitAsync();
        await expired.WaitAsync();
        Assert.False(waiting.IsCompleted);

        await server.CreateClient().ConnectAsync(new ConnectRequest(5, []));
        var changed = await waiting;
        Assert.True(changed.Epoch > known);
    }

    [Fact]
    public async Task WaitForChangeAsync_HostStopsDuringThePoll_UnavailableAtOnce()
    {
        var store = new InMemoryCoordinatorLogStore();
        using var waiting = new SignalingLoggerProvider(awaitedEventId: 3204);

        // A cap far beyond the test's run: only the host's stop can end this poll in time.
        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store), o => o.LongPollTimeout = TimeSpan.FromMinutes(10), waiting);
        var follower = server.CreateClient();
        long known = (await follower.GetStateAsync()).Epoch;

        var poll = follower.WaitForChangeAsync(known).AsTask();
        await waiting.WaitAsync();
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
}
