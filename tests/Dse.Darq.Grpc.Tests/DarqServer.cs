using System.Net;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Darq.Grpc.Tests;

/// <summary>A DarqService on 127.0.0.1 (a free port, or a given one to come back on after a restart) hosting the DARQs of a registry.</summary>
internal sealed class DarqServer : IAsyncDisposable
{
    private readonly WebApplication _app;
    private bool _stopped;

    private DarqServer(WebApplication app, DarqRegistry registry, int port, LogCapture logs)
    {
        Logs = logs;
        _app = app;
        Registry = registry;
        Port = port;
        Address = new Uri($"http://127.0.0.1:{port}");
        Channel = GrpcChannel.ForAddress(Address);
    }

    public DarqRegistry Registry { get; }

    /// <summary>The server's log events.</summary>
    public LogCapture Logs { get; }

    public int Port { get; }

    public Uri Address { get; }

    /// <summary>A channel to this server (disposed with it).</summary>
    public GrpcChannel Channel { get; }

    public static Task<DarqServer> StartAsync(int port, params Darq[] darqs) => StartAsync(port, configureServices: null, map: null, darqs);

    public static Task<DarqServer> StartAsync(params Darq[] darqs) => StartAsync(0, darqs);

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

        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        var logs = new LogCapture();
        builder.Logging.AddProvider(logs);
        builder.Logging.AddFilter("Dse", LogLevel.Debug);
        ListenOptions? endpoint = null;
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, port, listen =>
        {
            listen.Protocols = HttpProtocols.Http2;
            endpoint = listen;
        }));
        builder.Services.AddSingleton<IDarqResolver>(registry);
        builder.Services.AddGrpc();
        configureServices?.Invoke(builder.Services);
        var app = builder.Build();
        if (map is null)
        {
            app.MapDarqService();
        }
        else
        {
            map(app);
        }

        try
        {
            await app.StartAsync();
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }

        return new DarqServer(app, registry, ((IPEndPoint)endpoint!.EndPoint).Port, logs);
    }

    /// <summary>Stops the web server (its DARQs stay open; the caller owns them).</summary>
    public async Task StopAsync()
    {
        if (!_stopped)
        {
            _stopped = true;
            await _app.StopAsync();
        }
    }

    public async ValueTask DisposeAsync()
    {
        Channel.Dispose();
        await StopAsync();
        await _app.DisposeAsync();
    }
}
