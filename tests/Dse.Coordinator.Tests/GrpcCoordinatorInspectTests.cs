using Dse.Coordinator.Client;
using Dse.Coordinator.Tests.Infrastructure;
using Google.Protobuf;
using Grpc.Core;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator.Tests;

/// <summary>
/// Heartbeat statistics and the Inspect RPC over gRPC: what a participant reports arrives whole and comes back through
/// <see cref="GrpcCoordinatorClient.InspectAsync"/> as the coordinator's own inspection shows it; statistics or an
/// Inspect request that break the wire contract are refused, naming the field, and change nothing.
/// </summary>
public sealed class GrpcCoordinatorInspectTests
{
    private static readonly ParticipantStatistics Reported = new(
        12,
        1,
        new BarrierWaitDistribution([0.5, 5, 50], [3, 2, 0, 1], 61.25),
        [new QueueStatistics("orders", 40, 10, 7), new QueueStatistics("audit", 0, 0, 0)]);

    [Fact]
    public async Task InspectAsync_AfterHeartbeatWithStatistics_SameViewAsTheCoordinator()
    {
        await using var server = await StartAsync();
        var client = server.CreateClient();
        await client.ConnectAsync(new ConnectRequest(1, []));
        await client.ConnectAsync(new ConnectRequest(2, []));
        await client.ConnectAsync(new ConnectRequest(3, []));
        await client.RemoveParticipantAsync(3);
        await client.ReportPersistedAsync(1, new VersionReport(1, 1, []));
        await client.ReportPersistedAsync(2, new VersionReport(1, 1, [new Dependency(1, 2)]));
        await client.HeartbeatAsync(1, Reported);

        var inspection = await client.InspectAsync(maxVersionsPerParticipant: 8);
        var local = server.Coordinator.Inspect(8);

        Assert.Equal(local.Incarnation, inspection.Incarnation);
        Assert.Equal(local.Epoch, inspection.Epoch);
        Assert.Equal(local.WorldLine, inspection.WorldLine);
        Assert.Equal(local.IsRecovering, inspection.IsRecovering);
        Assert.Null(inspection.Fault);
        Assert.Equal([1L, 2L, 3L], inspection.Participants.Select(p => p.ObjectId));

        var one = inspection.Participants[0];
        Assert.Equal(1, one.Committed);
        Assert.NotNull(one.Statistics);
        Assert.Equal(12, one.Statistics.CurrentVersion);
        Assert.Equal(1, one.Statistics.WorldLine);
        Assert.Equal(Reported.BarrierWaits.UpperBoundsMilliseconds, one.Statistics.BarrierWaits.UpperBoundsMilliseconds);
        Assert.Equal(Reported.BarrierWaits.Counts, one.Statistics.BarrierWaits.Counts);
        Assert.Equal(61.25, one.Statistics.BarrierWaits.SumMilliseconds);
        Assert.Equal(Reported.Queues, one.Statistics.Queues);
        Assert.NotNull(one.StatisticsAge);

        // Participant 2's report waits on a version of 1 nobody reported: it stays uncommitted and listed.
        var two = inspection.Participants[1];
        Assert.Null(two.Statistics);
        Assert.Null(two.StatisticsAge);
        Assert.Equal(1, two.UncommittedCount);
        var report = Assert.Single(two.Uncommitted);
        Assert.Equal(1, report.Version);
        Assert.Equal([new Dependency(1, 2)], report.Dependencies);

        var three = inspection.Participants[2];
        Assert.True(three.Removed);
        Assert.Equal(local.Participants[2].RemovedBecause, three.RemovedBecause);

        var decision = Assert.Single(inspection.Decisions);
        Assert.Equal(RollbackReason.Removed, decision.Decision.Reason);
        Assert.Equal(3, decision.Decision.FailedObjectId);
        Assert.Equal(local.Decisions[0].ReportedBefore, decision.ReportedBefore);
        Assert.Equal(local.Decisions[0].LostThrough(2), decision.LostThrough(2));
    }

    [Fact]
    public async Task InspectAsync_ZeroVersions_CountsWithoutListings()
    {
        await using var server = await StartAsync();
        var client = server.CreateClient();
        await client.ConnectAsync(new ConnectRequest(2, []));
        await client.ReportPersistedAsync(2, new VersionReport(1, 0, [new Dependency(1, 2)]));

        var two = Assert.Single((await client.InspectAsync(0)).Participants);

        Assert.Equal(1, two.UncommittedCount);
        Assert.Empty(two.Uncommitted);
        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => client.InspectAsync(-1));
        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => client.InspectAsync(1025));
    }

    public static TheoryData<byte[], string> BrokenStatistics => new()
    {
        { Heartbeat(s => s.BarrierWaits = null), "HeartbeatRequest.statistics: barrier_waits is missing." },
        { Heartbeat(s => s.CurrentVersion = -4), "HeartbeatRequest.statistics: current_version is -4; versions are non-negative." },
        { Heartbeat(s => s.BarrierWaits.Counts.RemoveAt(0)), "HeartbeatRequest.statistics: barrier_waits: 3 counts for 3 bounds; there is one count more than bounds." },
        { Heartbeat(s => s.BarrierWaits.UpperBoundsMs[2] = double.NegativeInfinity), "HeartbeatRequest.statistics: barrier_waits: upper_bounds_ms[2] is -Infinity; bounds are finite, positive and strictly ascending." },
        { Heartbeat(s => s.Queues[1].Name = "orders"), "HeartbeatRequest.statistics: queues[1].name 'orders' appears twice; names are unique." },
        { Heartbeat(s => s.Queues[0].OutPending = -1), "HeartbeatRequest.statistics: queues[0] ('orders') has a negative depth; depths are non-negative." },
        { Heartbeat(s => s.Queues.Add(Enumerable.Range(0, 100).Select(i => new Wire.QueueStatistics { Name = $"q{i}" }))), "HeartbeatRequest.statistics: queues has 102 entries; at most 64 are accepted." },
        { Heartbeat(s => s.BarrierWaits.UpperBoundsMs.Add(Enumerable.Range(100, 40).Select(i => (double)i))), "HeartbeatRequest.statistics: barrier_waits: 43 bucket bounds; at most 32 are accepted." },
    };

    [Theory]
    [MemberData(nameof(BrokenStatistics))]
    public async Task Heartbeat_StatisticsBreakingTheContract_InvalidArgumentNamingTheFieldAndNothingChanges(byte[] request, string detail)
    {
        await using var server = await StartAsync();
        var client = server.CreateClient();
        await client.ConnectAsync(new ConnectRequest(1, []));
        await client.HeartbeatAsync(1, Reported);
        var before = server.Coordinator.State;

        var error = await RawCalls.RefusedAsync(server.Channel, "Heartbeat", request);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Equal(nameof(CoordinatorErrorCode.InvalidRequest), error.Trailers.GetValue(GrpcCoordinatorClient.ErrorCodeTrailer));
        Assert.Equal(detail, error.Status.Detail);
        StateAssert.Same(before, server.Coordinator.State);
        var kept = Assert.Single(server.Coordinator.Inspect().Participants).Statistics;
        Assert.Equal(12, kept!.CurrentVersion);
        Assert.Equal(Reported.Queues, kept.Queues);
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(1025)]
    [InlineData(int.MaxValue)]
    public async Task Inspect_MaxVersionsOutOfRange_InvalidArgumentNamingTheField(int maxVersions)
    {
        await using var server = await StartAsync();

        var error = await RawCalls.RefusedAsync(server.Channel, "Inspect", new Wire.InspectRequest { MaxVersionsPerParticipant = maxVersions }.ToByteArray());

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Equal($"InspectRequest.max_versions_per_participant is {maxVersions}; it is 0 to 1024.", error.Status.Detail);
    }

    [Fact]
    public async Task Inspect_GarbledBytes_InvalidArgument()
    {
        await using var server = await StartAsync();

        var error = await RawCalls.RefusedAsync(server.Channel, "Inspect", [0x08, 0xFF, 0xFF, 0xFF, 0xFF]);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Equal(nameof(CoordinatorErrorCode.InvalidRequest), error.Trailers.GetValue(GrpcCoordinatorClient.ErrorCodeTrailer));
    }

    private static byte[] Heartbeat(Action<Wire.ParticipantStatistics> breakIt)
    {
        var statistics = new Wire.ParticipantStatistics
        {
            CurrentVersion = 3,
            BarrierWaits = new Wire.BarrierWaitDistribution { UpperBoundsMs = { 1, 2, 3 }, Counts = { 0, 0, 0, 0 } },
            Queues = { new Wire.QueueStatistics { Name = "orders" }, new Wire.QueueStatistics { Name = "audit" } },
        };
        breakIt(statistics);
        return new Wire.HeartbeatRequest { ObjectId = 1, Statistics = statistics }.ToByteArray();
    }

    private static Task<CoordinatorTestServer> StartAsync()
    {
        var store = new InMemoryCoordinatorLogStore();
        return CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));
    }
}
