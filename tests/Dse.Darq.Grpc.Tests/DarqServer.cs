using Dse.Testing;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// A DarqService on a <see cref="LoopbackGrpcServer"/> (a free port, or a given one to come back on after a restart)
/// hosting the DARQs of a registry. The DARQs stay open when the server stops: the caller owns them.
/// </summary>
internal sealed class DarqServer : IAsyncDisposable
{
    private readonly LoopbackGrpcServer _server;

    private DarqServer(LoopbackGrpcServer server, DarqRegistry registry)
    {
        _server = server;
        Registry = registry;
    }

    public DarqRegistry Registry { get; }

    /// <summary>The server's log events.</summary>
    public LogCapture Logs => _server.Logs;

    public int Port => _server.Port;

    public Uri Address => _server.Address;

    /// <summary>A channel to this server (disposed with it).</summary>
    public GrpcChannel Channel => _server.Channel;

    public static Task<DarqServer> StartAsync(int port, params Darq[] darqs) => StartAsync(port, configureServices: null, map: null, darqs);

    public static Task<DarqServer> StartAsync(params Darq[] darqs) => StartAsync(0, darqs);

    /// <summary>
    /// Starts a server again on its old <paramref name="port"/>; should something else have taken the port meanwhile, on a
    /// free one (compare <see cref="Port"/>: the caller then redirects its sources there).
    /// </summary>
    public static async Task<DarqServer> RestartAsync(int port, params Darq[] darqs)
    {
        try
        {
            return await StartAsync(port, darqs);
        }
        catch (Exception e) when (e is IOException or InvalidOperationException)
        {
            return await StartAsync(darqs);
        }
    }

    /// <summary>Starts a server whose DarqService has these options (operator calls, say).</summary>
    public static Task<DarqServer> StartAsync(Action<DarqGrpcServiceOptions> configure, params Darq[] darqs) =>
        StartAsync(0, services => services.Configure(configure), map: null, darqs);

    /// <summary>
    /// Starts a server with extra services, and <paramref name="map"/> instead of <c>MapDarqService</c> when given (a
    /// stand-in service, for example).
    /// </summary>
    public static async Task<DarqServer> StartAsync(int port, Action<IServiceCollection>? configureServices, Action<WebApplication>? map, params Darq[] darqs)
    {
        var registry = new DarqRegistry();
        foreach (var darq in darqs)
        {
            registry.Add(darq);
        }

        var server = await LoopbackGrpcServer.StartAsync(
            map ?? (app => app.MapDarqService()),
            services =>
            {
                BadInputLogging.Capture(services);
                services.AddSingleton<IDarqResolver>(registry);
                configureServices?.Invoke(services);
            },
            port);
        return new DarqServer(server, registry);
    }

    /// <summary>Stops the web server (its DARQs stay open; the caller owns them).</summary>
    public Task StopAsync() => _server.StopAsync();

    public ValueTask DisposeAsync() => _server.DisposeAsync();
}
