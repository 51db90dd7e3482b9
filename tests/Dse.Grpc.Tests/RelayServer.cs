using System.Net;
using Dse.Grpc.Tests.Wire;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Grpc.Tests;

/// <summary>A relay node served over gRPC on a free port of 127.0.0.1, with the DSE server interceptor (or manual mode).</summary>
public sealed class RelayServer : IAsyncDisposable
{
    private readonly WebApplication _app;

    private RelayServer(WebApplication app, RelayNode node, Uri address)
    {
        _app = app;
        Node = node;
        Address = address;
        Channel = GrpcChannel.ForAddress(address);
    }

    public RelayNode Node { get; }

    public Uri Address { get; }

    /// <summary>A channel without DSE: calls from a non-speculative client.</summary>
    public GrpcChannel Channel { get; }

    public Relay.RelayClient PlainClient() => new(Channel);

    /// <summary>A client whose calls carry the caller's DSE state (inside a handler, or a bound sthread).</summary>
    public Relay.RelayClient DseClient() => new(Channel.Intercept(new DseClientInterceptor()));

    public static async Task<RelayServer> StartAsync(RelayNode node, bool manual = false)
    {
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        ListenOptions? endpoint = null;
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen =>
        {
            listen.Protocols = HttpProtocols.Http2;
            endpoint = listen;
        }));
        builder.Services.AddSingleton(node);

        // Resolved per call, so a restarted node (a new StateObject) is picked up by the next call.
        builder.Services.AddTransient(_ => new DseServerInterceptor(node.Counter));
        builder.Services.AddGrpc(options =>
        {
            if (!manual)
            {
                options.Interceptors.Add<DseServerInterceptor>();
            }
        });

        var app = builder.Build();
        if (manual)
        {
            app.MapGrpcService<ManualRelayService>();
        }
        else
        {
            app.MapGrpcService<RelayService>();
        }

        await app.StartAsync();
        return new RelayServer(app, node, new Uri($"http://127.0.0.1:{((IPEndPoint)endpoint!.EndPoint).Port}"));
    }

    public async ValueTask DisposeAsync()
    {
        Channel.Dispose();
        await _app.StopAsync();
        await _app.DisposeAsync();
    }
}
