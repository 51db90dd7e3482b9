using System.Net;
using Dse.Coordinator.Client;
using Dse.Testing;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>
/// The coordinator service in this process, wired as the host wires it (AddDseCoordinator, MapDseCoordinator,
/// MapDseCoordinatorHealth), on a <see cref="LoopbackGrpcServer"/>. Stops and disposes everything it started, the
/// clients it created included.
/// </summary>
public sealed class CoordinatorTestServer : IAsyncDisposable
{
    private readonly LoopbackGrpcServer _server;
    private readonly List<IDisposable> _clients = [];

    private CoordinatorTestServer(LoopbackGrpcServer server)
    {
        _server = server;
    }

    public Uri Address => _server.Address;

    /// <summary>A channel for raw calls (health, hand-made messages).</summary>
    public GrpcChannel Channel => _server.Channel;

    /// <summary>What the coordinator service logged (its own events from Debug on, gRPC's server events from Information).</summary>
    public LogCapture Logs => _server.Logs;

    public CoordinatorServer Server => _server.Services.GetRequiredService<CoordinatorServer>();

    public ClusterCoordinator Coordinator => Server.Coordinator;

    /// <summary>The host's lifetime: whether something asked it to stop.</summary>
    public IHostApplicationLifetime Lifetime => _server.Services.GetRequiredService<IHostApplicationLifetime>();

    public static async Task<CoordinatorTestServer> StartAsync(Func<ICoordinatorLog> createLog, Action<CoordinatorServerOptions>? configure = null)
    {
        var server = await LoopbackGrpcServer.StartAsync(
            app =>
            {
                app.MapDseCoordinator();
                app.MapDseCoordinatorHealth();
            },
            services => BadInputLogging.Capture(services).AddDseCoordinator(_ => createLog(), options =>
            {
                // No participant is removed behind a test's back unless the test asks for it.
                options.HeartbeatTimeout = null;
                configure?.Invoke(options);
            }));
        return new CoordinatorTestServer(server);
    }

    public GrpcCoordinatorClient CreateClient(GrpcCoordinatorClientOptions? options = null)
    {
        var client = new GrpcCoordinatorClient(Address, options);
        _clients.Add(client);
        return client;
    }

    /// <summary>An HTTP/2 client (prior knowledge, as gRPC uses) for /healthz on the gRPC port.</summary>
    public HttpClient CreateHttpClient()
    {
        var http = new HttpClient
        {
            BaseAddress = Address,
            DefaultRequestVersion = HttpVersion.Version20,
            DefaultVersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };
        _clients.Add(http);
        return http;
    }

    /// <summary>Stops the host as SIGTERM would; <see cref="DisposeAsync"/> then only releases what is left.</summary>
    public Task StopAsync() => _server.StopAsync();

    public async ValueTask DisposeAsync()
    {
        foreach (var client in _clients)
        {
            client.Dispose();
        }

        await _server.DisposeAsync();
    }
}
