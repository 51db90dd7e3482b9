using System.Net;
using Dse.Grpc.Tests.Wire;
using Dse.Hosting;
using Dse.Storage;
using Grpc.Core;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Grpc.Tests;

/// <summary>The interceptors wired by hosting: AddDse(...).AddGrpcInterceptors&lt;T&gt;() on a real ASP.NET host.</summary>
public sealed class DseGrpcHostingTests
{
    [Fact]
    public async Task AddGrpcInterceptors_PlainService_BecomesSpeculative()
    {
        await using var coordinator = new ClusterCoordinator();
        var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(), new SnapshotLogOptions { OwnsDevice = true });
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        ListenOptions? endpoint = null;
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen =>
        {
            listen.Protocols = HttpProtocols.Http2;
            endpoint = listen;
        }));
        builder.Services
            .AddDse(options =>
            {
                options.ObjectId = 2;
                options.GroupCommitPeriod = TimeSpan.FromMilliseconds(5);
            })
            .UseCoordinator(coordinator)
            .AddStateObject((_, options) => new CounterObject(options, log))
            .AddGrpcInterceptors<CounterObject>();
        builder.Services.AddSingleton(provider => new RelayNode { Counter = provider.GetRequiredService<CounterObject>() });

        await using var app = builder.Build();
        app.MapGrpcService<RelayService>();
        await app.StartAsync();
        var counter = app.Services.GetRequiredService<CounterObject>();
        await app.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync(CancellationToken.None);

        using var channel = GrpcChannel.ForAddress($"http://127.0.0.1:{((IPEndPoint)endpoint!.EndPoint).Port}");
        var client = new Relay.RelayClient(channel);

        // A plain caller: the reply comes once the addition is recoverable.
        var reply = await client.AddAsync(new AddRequest { Amount = 2 });
        Assert.Equal(2, reply.Total);
        Assert.True(counter.CommittedVersion >= reply.Version);

        // A speculative caller: the reply carries the call's header.
        var headers = new Metadata();
        DseMetadata.SetHeader(headers, DseHeader.FromDependencies(0, []));
        using var call = client.AddAsync(new AddRequest { Amount = 1 }, headers);
        await call.ResponseAsync;
        Assert.True(DseMetadata.TryGetHeader(call.GetTrailers(), out var replyHeader));
        Assert.Contains(Enumerable.Range(0, replyHeader.DependencyCount).Select(replyHeader.GetDependency), d => d.ObjectId == 2);
        await app.StopAsync();
    }
}
