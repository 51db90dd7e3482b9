using System.Net;
using Dse.Coordinator;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Dse.Hosting.Tests;

/// <summary>A host whose StateObject connects to a coordinator served over gRPC on 127.0.0.1 in this process.</summary>
public sealed class RemoteCoordinatorTests
{
    [Fact]
    public async Task StartAsync_CoordinatorUrlInConfiguration_ConnectsOverGrpcAndCommits()
    {
        await using var coordinator = await StartCoordinatorAsync();
        var address = coordinator.Urls.Single();
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:Coordinator", address)));
        var counter = await host.StartCounterAsync();

        long version = await counter.IncrementAndCommitAsync();

        Assert.True(coordinator.Services.GetRequiredService<CoordinatorServer>().Coordinator.State.CommittedVersion(1) >= version);
        await host.StopAsync();
    }

    /// <summary>The coordinator service as its host wires it, on a free port of 127.0.0.1 with HTTP/2 only.</summary>
    private static async Task<WebApplication> StartCoordinatorAsync()
    {
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen => listen.Protocols = HttpProtocols.Http2));
        var store = new InMemoryCoordinatorLogStore();
        builder.Services.AddDseCoordinator(_ => new InMemoryCoordinatorLog(store), options => options.HeartbeatTimeout = null);
        var app = builder.Build();
        app.MapDseCoordinator();
        await app.StartAsync();
        return app;
    }
}
