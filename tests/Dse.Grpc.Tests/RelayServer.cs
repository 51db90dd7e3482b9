using Dse.Grpc.Tests.Wire;
using Dse.Testing;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Grpc.Tests;

/// <summary>A relay node served on a <see cref="LoopbackGrpcServer"/>, with the DSE server interceptor (or manual mode).</summary>
public sealed class RelayServer : IAsyncDisposable
{
    private readonly LoopbackGrpcServer _server;

    private RelayServer(LoopbackGrpcServer server, RelayNode node)
    {
        _server = server;
        Node = node;
    }

    public RelayNode Node { get; }

    public Uri Address => _server.Address;

    /// <summary>What the server logged (Dse categories from Debug, gRPC's server events from Information, everything else from Warning).</summary>
    public LogCapture Logs => _server.Logs;

    /// <summary>A channel without DSE: calls from a non-speculative client.</summary>
    public GrpcChannel Channel => _server.Channel;

    public Relay.RelayClient PlainClient() => new(Channel);

    /// <summary>A client whose calls carry the caller's DSE state (inside a handler, or a bound sthread).</summary>
    public Relay.RelayClient DseClient() => new(Channel.Intercept(new DseClientInterceptor()));

    /// <summary>Serves <paramref name="node"/>; with <paramref name="authentication"/>, only callers it accepts may send a DSE header.</summary>
    public static async Task<RelayServer> StartAsync(RelayNode node, bool manual = false, DseHeaderAuthentication? authentication = null)
    {
        var server = await LoopbackGrpcServer.StartAsync(
            app =>
            {
                if (manual)
                {
                    app.MapGrpcService<ManualRelayService>();
                }
                else
                {
                    app.MapGrpcService<RelayService>();
                }
            },
            services =>
            {
                BadInputLogging.Capture(services);
                services.AddSingleton(node);
                if (authentication is not null)
                {
                    services.AddSingleton(authentication);
                }

                // Resolved per call, so a restarted node (a new StateObject) is picked up by the next call.
                services.AddTransient(_ => new DseServerInterceptor(node.Counter, authentication));
                services.AddGrpc(options =>
                {
                    if (!manual)
                    {
                        options.Interceptors.Add<DseServerInterceptor>();
                    }
                });
            });
        return new RelayServer(server, node);
    }

    public ValueTask DisposeAsync() => _server.DisposeAsync();
}
