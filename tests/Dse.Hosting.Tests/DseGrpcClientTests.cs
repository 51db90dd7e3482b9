using System.Net.Sockets;
using Dse.Grpc;
using Dse.Testing;
using Dse.Testing.Wire;
using Grpc.Core;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Hosting.Tests;

/// <summary>
/// <c>AddGrpcClient&lt;T&gt;(...).AddDseInterceptor()</c>: the client carries the DSE interceptor, and its pooled
/// handler connects the same way for every channel the client factory builds on it, so concurrent first calls cannot
/// leave the client with a channel that never connects (grpc/grpc-dotnet#1720).
/// </summary>
public sealed class DseGrpcClientTests
{
    private const string ClientName = nameof(Back.BackClient);

    [Fact]
    public async Task AddDseInterceptor_RegistersTheInterceptorAndTheClientServes()
    {
        await using var server = await StartServerAsync();
        await using var provider = ClientServices(server.Address, client => client.AddDseInterceptor());

        var reply = await provider.GetRequiredService<Back.BackClient>().AddAsync(new AddRequest { Amount = 4 });

        Assert.Equal(4, reply.Total);
        Assert.Same(provider.GetRequiredService<DseClientInterceptor>(), provider.GetRequiredService<DseClientInterceptor>());
    }

    [Fact]
    public async Task AddDseInterceptor_PrimaryHandlerKeepsGrpcDefaultsAndItsOwnConnectCallbackAfterChannelsAreBuilt()
    {
        await using var server = await StartServerAsync();
        await using var provider = ClientServices(server.Address, client => client.AddDseInterceptor());
        await provider.GetRequiredService<Back.BackClient>().AddAsync(new AddRequest { Amount = 1 });

        var chain = provider.GetRequiredService<IHttpMessageHandlerFactory>().CreateHandler(ClientName);
        var connect = PrimaryOf(chain).ConnectCallback;
        using (var other = GrpcChannel.ForAddress(server.Address, new GrpcChannelOptions { HttpHandler = chain, DisposeHttpClient = false }))
        {
            await new Back.BackClient(other).AddAsync(new AddRequest { Amount = 1 });
        }

        var primary = PrimaryOf(chain);
        Assert.True(primary.EnableMultipleHttp2Connections, "the gRPC client factory's own handler settings are kept");
        Assert.NotNull(connect);
        Assert.Same(connect, primary.ConnectCallback);
    }

    /// <summary>
    /// The interleaving behind grpc/grpc-dotnet#1720, made deterministic: channel A reads the shared handler while it
    /// has a connect callback that Grpc.Net.Client has not marked as its own (A takes a transport that cannot connect),
    /// then channel B configures the handler for itself. On a plain handler, A's calls then fail every time; on the
    /// handler <c>AddDseInterceptor</c> prepared, both channels serve.
    /// </summary>
    [Fact]
    public async Task ChannelBuiltWhileAnotherConfiguresTheSharedHandler_FailsOnAPlainHandler_ServesOnAPreparedOne()
    {
        await using var server = await StartServerAsync();

        using var plain = new SocketsHttpHandler { EnableMultipleHttp2Connections = true };
        plain.ConnectCallback = (_, _) => throw new InvalidOperationException("A channel reads the handler here; nothing connects through this.");
        using var a = GrpcChannel.ForAddress(server.Address, new GrpcChannelOptions { HttpHandler = plain, DisposeHttpClient = false });
        plain.ConnectCallback = null;
        using var b = GrpcChannel.ForAddress(server.Address, new GrpcChannelOptions { HttpHandler = plain, DisposeHttpClient = false });
        for (int attempt = 0; attempt < 3; attempt++)
        {
            var error = await Assert.ThrowsAsync<RpcException>(() => new Back.BackClient(a).AddAsync(new AddRequest { Amount = 1 }).ResponseAsync);
            Assert.True(
                error.StatusCode == StatusCode.Internal && error.Status.DebugException?.InnerException is NotSupportedException,
                $"Grpc.Net.Client no longer fails this way ({error}); if an upgrade fixed grpc/grpc-dotnet#1720, AddDseInterceptor's connect callback can go.");
        }

        await using var provider = ClientServices(server.Address, client => client.AddDseInterceptor());
        var prepared = provider.GetRequiredService<IHttpMessageHandlerFactory>().CreateHandler(ClientName);
        using var first = GrpcChannel.ForAddress(server.Address, new GrpcChannelOptions { HttpHandler = prepared, DisposeHttpClient = false });
        using var second = GrpcChannel.ForAddress(server.Address, new GrpcChannelOptions { HttpHandler = prepared, DisposeHttpClient = false });
        Assert.Equal(1, (await new Back.BackClient(first).AddAsync(new AddRequest { Amount = 1 })).Total);
        Assert.Equal(2, (await new Back.BackClient(second).AddAsync(new AddRequest { Amount = 2 })).Total);
    }

    [Fact]
    public async Task ConcurrentFirstCalls_FromFreshProviders_AllServe()
    {
        await using var server = await StartServerAsync();
        for (int round = 0; round < 20; round++)
        {
            await using var provider = ClientServices(server.Address, client => client.AddDseInterceptor());
            using var start = new Barrier(8);
            var calls = Enumerable.Range(0, 8).Select(_ => Task.Run(async () =>
            {
                start.SignalAndWait(TimeSpan.FromSeconds(30));
                return await provider.GetRequiredService<Back.BackClient>().AddAsync(new AddRequest { Amount = 1 });
            }));

            var replies = await Task.WhenAll(calls);

            Assert.All(replies, reply => Assert.Equal(1, reply.Total));
        }
    }

    [Fact]
    public async Task AddDseInterceptor_CalledBeforeConfigurePrimaryHttpMessageHandler_PreparesTheHandlerTheClientEndsWith()
    {
        await using var server = await StartServerAsync();
        var own = new SocketsHttpHandler();
        await using var provider = ClientServices(server.Address, client => client
            .AddDseInterceptor()
            .ConfigurePrimaryHttpMessageHandler(() => own));

        var reply = await provider.GetRequiredService<Back.BackClient>().AddAsync(new AddRequest { Amount = 5 });

        Assert.Equal(5, reply.Total);
        var primary = PrimaryOf(provider.GetRequiredService<IHttpMessageHandlerFactory>().CreateHandler(ClientName));
        Assert.Same(own, primary);
        Assert.NotNull(primary.ConnectCallback);
    }

    [Fact]
    public async Task AddDseInterceptor_LeavesAUsersConnectCallbackAndOtherPrimaryHandlersAsTheyAre()
    {
        await using var server = await StartServerAsync();
        int connects = 0;
        await using (var provider = ClientServices(server.Address, client => client
            .ConfigurePrimaryHttpMessageHandler(() => new SocketsHttpHandler
            {
                ConnectCallback = async (context, cancellationToken) =>
                {
                    Interlocked.Increment(ref connects);
                    var socket = new Socket(SocketType.Stream, ProtocolType.Tcp);
                    await socket.ConnectAsync(context.DnsEndPoint, cancellationToken);
                    return new NetworkStream(socket, ownsSocket: true);
                },
            })
            .AddDseInterceptor()))
        {
            await provider.GetRequiredService<Back.BackClient>().AddAsync(new AddRequest { Amount = 1 });
        }

        Assert.NotEqual(0, connects);

        await using (var provider = ClientServices(server.Address, client => client
            .ConfigurePrimaryHttpMessageHandler(() => new HttpClientHandler())
            .AddDseInterceptor()))
        {
            var reply = await provider.GetRequiredService<Back.BackClient>().AddAsync(new AddRequest { Amount = 1 });
            Assert.Equal(1, reply.Total);
        }
    }

    /// <summary>A Back service without DSE that answers with the amount sent: the client's interceptor passes calls made outside DSE through.</summary>
    private sealed class EchoBack : Back.BackBase
    {
        public override Task<AddReply> Add(AddRequest request, ServerCallContext context) =>
            Task.FromResult(new AddReply { Total = request.Amount });
    }

    private static Task<LoopbackGrpcServer> StartServerAsync() =>
        LoopbackGrpcServer.StartAsync(app => app.MapGrpcService<EchoBack>(), services => services.AddSingleton<EchoBack>());

    private static ServiceProvider ClientServices(Uri address, Action<IHttpClientBuilder> configure)
    {
        var services = new ServiceCollection();
        services.AddLogging();
        configure(services.AddGrpcClient<Back.BackClient>(options => options.Address = address));
        return services.BuildServiceProvider();
    }

    private static SocketsHttpHandler PrimaryOf(HttpMessageHandler handler)
    {
        while (handler is DelegatingHandler delegating)
        {
            handler = delegating.InnerHandler ?? throw new InvalidOperationException("A delegating handler without an inner one.");
        }

        return Assert.IsType<SocketsHttpHandler>(handler);
    }
}
