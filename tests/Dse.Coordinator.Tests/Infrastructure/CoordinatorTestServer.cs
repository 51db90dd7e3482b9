using System.Net;
using Dse.Coordinator.Client;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>
/// The coordinator service in this process, wired as the host wires it (AddDseCoordinator, MapDseCoordinator,
/// MapDseCoordinatorHealth), on a free port of 127.0.0.1 with HTTP/2 only. Stops and disposes everything it started.
/// </summary>
public sealed class CoordinatorTestServer : IAsyncDisposable
{
    private readonly WebApplication _app;
    private readonly List<IDisposable> _clients = [];

    private CoordinatorTestServer(WebApplication app, Uri address)
    {
        _app = app;
        Address = address;
        Channel = GrpcChannel.ForAddress(address);
        _clients.Add(Channel);
    }

    public Uri Address { get; }

    /// <summary>A channel for raw calls (health, hand-made messages).</summary>
    public GrpcChannel Channel { get; }

    public CoordinatorServer Server => _app.Services.GetRequiredService<CoordinatorServer>();

    public ClusterCoordinator Coordinator => Server.Coordinator;

    /// <summary>The host's lifetime: whether something asked it to stop.</summary>
    public IHostApplicationLifetime Lifetime => _app.Services.GetRequiredService<IHostApplicationLifetime>();

    public static async Task<CoordinatorTestServer> StartAsync(Func<ICoordinatorLog> createLog, Action<CoordinatorServerOptions>? configure = null, ILoggerProvider? logs = null)
    {
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        if (logs is not null)
        {
            builder.Logging.AddProvider(logs);
            builder.Logging.SetMinimumLevel(LogLevel.Debug);
        }

        ListenOptions? endpoint = null;
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen =>
        {
            listen.Protocols = HttpProtocols.Http2;
            endpoint = listen;
        }));
        builder.Services.AddDseCoordinator(_ => createLog(), options =>
        {
            // No participant is removed behind a test's back unless the test asks for it.
            options.HeartbeatTimeout = null;
            configure?.Invoke(options);
        });

        var app = builder.Build();
        app.MapDseCoordinator();
        app.MapDseCoordinatorHealth();
        _ = app.Services.GetRequiredService<IServer>();
        try
        {
            await app.StartAsync();
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }

        return new CoordinatorTestServer(app, new Uri($"http://127.0.0.1:{((IPEndPoint)endpoint!.EndPoint).Port}"));
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
    public Task StopAsync() => _app.StopAsync();

    public async ValueTask DisposeAsync()
    {
        foreach (var client in _clients)
        {
            client.Dispose();
        }

        await _app.StopAsync();
        await _app.DisposeAsync();
    }
}
