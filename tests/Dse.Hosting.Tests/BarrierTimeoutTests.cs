using Dse.Grpc;
using Dse.Storage;
using Dse.Testing;
using Dse.Testing.Wire;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Hosting.Tests;

/// <summary>Replies of intercepted calls wait at their barrier at most <c>Dse:BarrierTimeout</c>, then fail with a reason.</summary>
public sealed class BarrierTimeoutTests
{
    [Fact]
    public async Task PlainCall_VersionNeverCommits_FailsWithDeadlineExceededNamingTheVersionsAndWhy()
    {
        var coordinator = new GatedCoordinator { SwallowReports = true };
        coordinator.Open();
        await using var server = await StartAsync(TimeSpan.FromMilliseconds(200), dse => dse.UseCoordinator(coordinator));
        var client = new Back.BackClient(server.Channel);

        // The caller's own deadline only keeps a broken bound from hanging the test.
        var error = await Assert.ThrowsAsync<RpcException>(() => client.AddAsync(new AddRequest { Amount = 1 }, deadline: DateTime.UtcNow.AddSeconds(10)).ResponseAsync);

        Assert.Equal(StatusCode.DeadlineExceeded, error.StatusCode);
        Assert.Contains("/dse.testing.v1.Back/Add: the reply waited 0.2 s (Dse:BarrierTimeout) at its barrier", error.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("It waits for StateObject 1's versions up to 1 (world-line 0)", error.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("StateObject 1's own version 1 has not committed (committed through 0)", error.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("may still commit", error.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public async Task PlainCall_CommitsFlow_ReplyPassesItsBarrier()
    {
        await using var server = await StartAsync(TimeSpan.FromSeconds(30), dse => { });
        var client = new Back.BackClient(server.Channel);
        var counter = server.Services.GetRequiredService<CounterStateObject>();

        var reply = await client.AddAsync(new AddRequest { Amount = 3 });

        Assert.Equal(3, reply.Total);
        Assert.True(counter.CommittedVersion >= 1, $"committed {counter.CommittedVersion}");
    }

    [Fact]
    public async Task SpeculativeCall_VersionNeverCommits_ReplyLeavesAtOnceWithItsHeader()
    {
        var coordinator = new GatedCoordinator { SwallowReports = true };
        coordinator.Open();
        await using var server = await StartAsync(TimeSpan.FromMilliseconds(200), dse => dse.UseCoordinator(coordinator));
        var client = new Back.BackClient(server.Channel);
        var headers = new Metadata();
        DseMetadata.SetHeader(headers, DseHeader.FromDependencies(0, []));

        using var call = client.AddAsync(new AddRequest { Amount = 1 }, headers, deadline: DateTime.UtcNow.AddSeconds(10));
        var reply = await call.ResponseAsync;

        Assert.Equal(1, reply.Total);
        Assert.True(DseMetadata.TryGetHeader(call.GetTrailers(), out var header));
        Assert.Equal((1L, 1L), (header.Origin.ObjectId, header.Origin.Version));
    }

    [Fact]
    public async Task PlainCall_BarrierTimeoutInfinite_WaitsUntilTheCallerGivesUp()
    {
        var coordinator = new GatedCoordinator { SwallowReports = true };
        coordinator.Open();
        await using var server = await StartAsync(Timeout.InfiniteTimeSpan, dse => dse.UseCoordinator(coordinator));
        var client = new Back.BackClient(server.Channel);

        // The caller's own deadline is what ends the wait: the server does not bound it.
        var error = await Assert.ThrowsAsync<RpcException>(() => client.AddAsync(new AddRequest { Amount = 1 }, deadline: DateTime.UtcNow.AddMilliseconds(300)).ResponseAsync);

        Assert.Equal(StatusCode.DeadlineExceeded, error.StatusCode);
        Assert.DoesNotContain("Dse:BarrierTimeout", error.Status.Detail, StringComparison.Ordinal);
    }

    /// <summary>A gRPC server with <see cref="CounterBackService"/> made speculative on a counter (id 1) by AddDse.</summary>
    private static async Task<LoopbackGrpcServer> StartAsync(TimeSpan barrierTimeout, Action<IDseBuilder> configure)
    {
        var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(), new SnapshotLogOptions { OwnsDevice = true });
        var server = await LoopbackGrpcServer.StartAsync(app => app.MapGrpcService<CounterBackService>(), services =>
        {
            var dse = services
                .AddDse(options =>
                {
                    options.ObjectId = 1;
                    options.GroupCommitPeriod = TimeSpan.FromMilliseconds(5);
                    options.BarrierTimeout = barrierTimeout;

                    // Versions that never commit would hold the stop for the whole default shutdown timeout.
                    options.ShutdownTimeout = TimeSpan.Zero;
                })
                .AddStateObject((_, options) => new CounterStateObject(options, log))
                .AddGrpcInterceptors<CounterStateObject>();
            configure(dse);
        });
        await server.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync();
        return server;
    }
}
