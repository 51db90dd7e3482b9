using Dse.Coordinator;
using Dse.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace Dse.Hosting.Tests;

/// <summary>A host whose StateObject connects to a coordinator served over gRPC on 127.0.0.1 in this process.</summary>
public sealed class RemoteCoordinatorTests
{
    [Fact]
    public async Task StartAsync_CoordinatorUrlInConfiguration_ConnectsOverGrpcAndCommits()
    {
        await using var coordinator = await StartCoordinatorAsync();
        var address = coordinator.Address.OriginalString;
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:Coordinator", address)));
        var counter = await host.StartCounterAsync();

        long version = await counter.IncrementAndCommitAsync();

        Assert.True(coordinator.Services.GetRequiredService<CoordinatorServer>().Coordinator.State.CommittedVersion(1) >= version);
        await host.StopAsync();
    }

    /// <summary>The coordinator service as its host wires it, on a loopback gRPC server.</summary>
    private static Task<LoopbackGrpcServer> StartCoordinatorAsync()
    {
        var store = new InMemoryCoordinatorLogStore();
        return LoopbackGrpcServer.StartAsync(
            app => app.MapDseCoordinator(),
            services => services.AddDseCoordinator(_ => new InMemoryCoordinatorLog(store), options => options.HeartbeatTimeout = null));
    }
}
