using System.Net;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Testing;

/// <summary>
/// A gRPC server in this process for tests: Kestrel on 127.0.0.1, HTTP/2 only (as gRPC speaks it without TLS), on a free
/// port or on a given one (to come back on after a restart). The caller adds services and maps endpoints; the server adds
/// gRPC itself and records its log in <see cref="Logs"/> (<c>Dse</c> categories from Debug, everything else from
/// Warning). The test owns its lifetime: <see cref="StopAsync"/> stops serving, <see cref="DisposeAsync"/> releases
/// everything, the <see cref="Channel"/> included. One test flow drives it; it is not meant for concurrent calls.
/// </summary>
public sealed class LoopbackGrpcServer : IAsyncDisposable
{
    private readonly WebApplication _app;
    private ListenOptions? _endpoint;
    private GrpcChannel? _channel;
    private State _state;

    private LoopbackGrpcServer(int port, Action<IServiceCollection>? configureServices, Action<WebApplication> map)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(port);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(port, IPEndPoint.MaxPort);
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        builder.Logging.AddProvider(Logs);
        builder.Logging.SetMinimumLevel(LogLevel.Warning);
        builder.Logging.AddFilter("Dse", LogLevel.Debug);
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, port, listen =>
        {
            listen.Protocols = HttpProtocols.Http2;
            _endpoint = listen;
        }));
        builder.Services.AddGrpc();
        configureServices?.Invoke(builder.Services);
        _app = builder.Build();
        map(_app);
    }

    private enum State
    {
        Built,
        Started,
        Stopped,
        Disposed,
    }

    /// <summary>What the server logged (from its build on, so start-up events too).</summary>
    public LogCapture Logs { get; } = new();

    /// <summary>The server's services (resolvable before it starts, and after a failed start).</summary>
    public IServiceProvider Services => _app.Services;

    /// <summary>The port bound (once started).</summary>
    public int Port => _state is State.Started or State.Stopped
        ? ((IPEndPoint)_endpoint!.EndPoint).Port
        : throw new InvalidOperationException($"Only a started server has a port; this one is {_state}.");

    /// <summary><c>http://127.0.0.1:port</c> (once started).</summary>
    public Uri Address => new(string.Create(System.Globalization.CultureInfo.InvariantCulture, $"http://127.0.0.1:{Port}"));

    /// <summary>A channel to this server without interceptors (once started; disposed with the server).</summary>
    public GrpcChannel Channel => _channel ?? throw new InvalidOperationException($"Only a started server has a channel; this one is {_state}.");

    /// <summary>
    /// Builds a server without starting it, for a test that asserts on the start itself (a start that must fail, say);
    /// the test disposes it whether or not <see cref="StartAsync(CancellationToken)"/> succeeded.
    /// </summary>
    /// <param name="map">Maps the endpoints (the gRPC services).</param>
    /// <param name="configureServices">Adds the services the endpoints need; gRPC itself is already added.</param>
    /// <param name="port">The port to bind; 0 (the default) for a free one.</param>
    public static LoopbackGrpcServer Create(Action<WebApplication> map, Action<IServiceCollection>? configureServices = null, int port = 0)
    {
        ArgumentNullException.ThrowIfNull(map);
        return new LoopbackGrpcServer(port, configureServices, map);
    }

    /// <summary>Builds and starts a server; a server whose start fails is disposed before the error reaches the caller.</summary>
    /// <param name="map">Maps the endpoints (the gRPC services).</param>
    /// <param name="configureServices">Adds the services the endpoints need; gRPC itself is already added.</param>
    /// <param name="port">The port to bind; 0 (the default) for a free one.</param>
    public static async Task<LoopbackGrpcServer> StartAsync(Action<WebApplication> map, Action<IServiceCollection>? configureServices = null, int port = 0)
    {
        var server = Create(map, configureServices, port);
        try
        {
            await server.StartAsync();
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }

        return server;
    }

    /// <summary>Starts serving (the hosted services first, as any host does); a port already taken fails with <see cref="IOException"/>.</summary>
    public async Task StartAsync(CancellationToken cancellationToken = default)
    {
        if (_state != State.Built)
        {
            throw new InvalidOperationException($"The server can start only once; it is {_state}.");
        }

        await _app.StartAsync(cancellationToken);
        _state = State.Started;
        _channel = GrpcChannel.ForAddress(Address);
    }

    /// <summary>Stops serving, as SIGTERM would (the hosted services stop too); calls after the first do nothing.</summary>
    public async Task StopAsync()
    {
        if (_state == State.Started)
        {
            _state = State.Stopped;
            await _app.StopAsync();
        }
    }

    /// <summary>
    /// Stops the server if it is running, then releases it. A server whose start failed is disposed without a stop:
    /// disposing the host is what releases what its failed start opened.
    /// </summary>
    public async ValueTask DisposeAsync()
    {
        if (_state == State.Disposed)
        {
            return;
        }

        _channel?.Dispose();
        await StopAsync();
        _state = State.Disposed;
        await _app.DisposeAsync();
    }
}
