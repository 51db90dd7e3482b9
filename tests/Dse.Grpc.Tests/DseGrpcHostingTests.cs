using Dse.Grpc.Tests.Wire;
using Dse.Hosting;
using Dse.Storage;
using Dse.Testing;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Grpc.Tests;

/// <summary>The interceptors wired by hosting: AddDse(...).AddGrpcInterceptors&lt;T&gt;() on a real ASP.NET host.</summary>
public sealed class DseGrpcHostingTests
{
    [Fact]
    public async Task AddGrpcInterceptors_PlainService_BecomesSpeculative()
    {
        await using var coordinator = new ClusterCoordinator();
        var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(), new SnapshotLogOptions { OwnsDevice = true });
        await using var server = await LoopbackGrpcServer.StartAsync(app => app.MapGrpcService<RelayService>(), services =>
        {
            services
                .AddDse(options =>
                {
                    options.ObjectId = 2;
                    options.GroupCommitPeriod = TimeSpan.FromMilliseconds(5);
                })
                .UseCoordinator(coordinator)
                .AddStateObject((_, options) => new CounterObject(options, log))
                .AddGrpcInterceptors<CounterObject>();
            services.AddSingleton(provider => new RelayNode { Counter = provider.GetRequiredService<CounterObject>() });
        });
        var counter = server.Services.GetRequiredService<CounterObject>();
        await server.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync(CancellationToken.None);

        var client = new Relay.RelayClient(server.Channel);

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
        await server.StopAsync();
    }

    [Fact]
    public async Task AddGrpcInterceptors_ClientInterceptor_WarnsThroughTheHostsLogger()
    {
        await using var coordinator = new ClusterCoordinator();
        var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(), new SnapshotLogOptions { OwnsDevice = true });
        await using var host = await LoopbackGrpcServer.StartAsync(_ => { }, services =>
            services
                .AddDse(options =>
                {
                    options.ObjectId = 2;
                    options.GroupCommitPeriod = TimeSpan.FromMilliseconds(5);
                })
                .UseCoordinator(coordinator)
                .AddStateObject((_, options) => new CounterObject(options, log))
                .AddGrpcInterceptors<CounterObject>());
        await using var plain = await LoopbackGrpcServer.StartAsync(app => app.MapGrpcService<NoDseRelayService>());
        var counter = host.Services.GetRequiredService<CounterObject>();
        await host.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync(CancellationToken.None);
        var client = new Relay.RelayClient(plain.Channel.Intercept(host.Services.GetRequiredService<DseClientInterceptor>()));

        await counter.StartLocalActionAsync();
        using (DseCall.Use(counter.Detach()))
        {
            await client.AddAsync(new AddRequest { Amount = 1 });
        }

        var warning = await host.Logs.WaitForAsync(1300).WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(typeof(DseClientInterceptor).FullName, warning.Category);
        await host.StopAsync();
    }
}
