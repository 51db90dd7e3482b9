using Dse.Hosting;
using Dse.Storage;
using DseService.Wire;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace DseService.Tests;

/// <summary>The service in process on 127.0.0.1, its StateObject on an in-memory log, called over gRPC.</summary>
public sealed class CountersServiceTests
{
    [Fact]
    public async Task Add_SameCounterTwice_ReturnsTheSum()
    {
        await using var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(), new SnapshotLogOptions { OwnsDevice = true });
        await using var app = await StartAsync(log);
        using var channel = GrpcChannel.ForAddress(ServiceHost.AddressOf(app));
        var client = new Counters.CountersClient(channel);

        var first = await client.AddAsync(new AddRequest { Name = "orders", Delta = 2 });
        var second = await client.AddAsync(new AddRequest { Name = "orders", Delta = 3 });

        Assert.Equal(2, first.Value);
        Assert.Equal(5, second.Value);
        Assert.True(second.Version > first.Version, $"each call is an action in a later version ({first.Version}, {second.Version})");
    }

    [Fact]
    public async Task Restart_OnTheSameLog_RestoresTheCounters()
    {
        await using var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(), new SnapshotLogOptions { OwnsDevice = true });
        await using (var app = await StartAsync(log))
        {
            using var channel = GrpcChannel.ForAddress(ServiceHost.AddressOf(app));
            await new Counters.CountersClient(channel).AddAsync(new AddRequest { Name = "orders", Delta = 7 });
            // A graceful stop persists and commits what is outstanding.
            await app.StopAsync();
        }

        await using var restarted = await StartAsync(log);
        using var restartedChannel = GrpcChannel.ForAddress(ServiceHost.AddressOf(restarted));
        var reply = await new Counters.CountersClient(restartedChannel).GetAsync(new GetRequest { Name = "orders" });

        Assert.Equal(7, reply.Value);
    }

    /// <summary>Starts the service on a free port with its own in-process coordinator and waits until DSE is connected.</summary>
    private static async Task<WebApplication> StartAsync(SnapshotLog log)
    {
        var builder = ServiceHost.CreateBuilder(["--Service:Port=0", "--Dse:ObjectId=1", "--Dse:Coordinator=in-process"]);
        var app = ServiceHost.Build(builder, log);
        await app.StartAsync();
        // The host connects its StateObject in the background; calls before that fail with UNAVAILABLE.
        await app.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync();
        return app;
    }
}
