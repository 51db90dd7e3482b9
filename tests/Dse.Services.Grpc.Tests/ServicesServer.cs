using System.Net;
using Dse.Grpc;
using Dse.Services.Grpc.V1;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Services.Grpc.Tests;

/// <summary>A service of Dse.Services.Grpc on a free port of 127.0.0.1: with the DSE server interceptor, or the manual KV.</summary>
public sealed class ServicesServer : IAsyncDisposable
{
    private readonly WebApplication _app;

    private ServicesServer(WebApplication app, Uri address)
    {
        _app = app;
        Channel = GrpcChannel.ForAddress(address);
    }

    /// <summary>A channel without DSE: calls from a non-speculative client.</summary>
    public GrpcChannel Channel { get; }

    public KeyValueService.KeyValueServiceClient PlainKv() => new(Channel);

    /// <summary>A client whose calls carry the sthread bound with DseCall.Use.</summary>
    public KeyValueService.KeyValueServiceClient DseKv() => new(Channel.Intercept(new DseClientInterceptor()));

    public LogService.LogServiceClient PlainLog() => new(Channel);

    public LogService.LogServiceClient DseLog() => new(Channel.Intercept(new DseClientInterceptor()));

    public static Task<ServicesServer> StartKvAsync(SpeculativeKv kv, bool manual) =>
        StartAsync(services =>
        {
            services.AddSingleton(kv);
            var grpc = services.AddGrpc();
            if (!manual)
            {
                grpc.AddServiceOptions<SpeculativeKvService>(o => o.Interceptors.Add<DseServerInterceptor>(kv));
            }
        }, app =>
        {
            if (manual)
            {
                app.MapManualSpeculativeKv();
            }
            else
            {
                app.MapSpeculativeKv();
            }
        });

    public static Task<ServicesServer> StartLogAsync(SpeculativeLog log) =>
        StartAsync(services =>
        {
            services.AddSingleton(log);
            services.AddGrpc().AddServiceOptions<SpeculativeLogService>(o => o.Interceptors.Add<DseServerInterceptor>(log));
        }, app => app.MapSpeculativeLog());

    private static async Task<ServicesServer> StartAsync(Action<IServiceCollection> configure, Action<WebApplication> map)
    {
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        ListenOptions? endpoint = null;
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen =>
        {
            listen.Protocols = HttpProtocols.Http2;
            endpoint = listen;
        }));
        configure(builder.Services);
        var app = builder.Build();
        map(app);
        await app.StartAsync();
        return new ServicesServer(app, new Uri($"http://127.0.0.1:{((IPEndPoint)endpoint!.EndPoint).Port}"));
    }

    public async ValueTask DisposeAsync()
    {
        Channel.Dispose();
        await _app.StopAsync();
        await _app.DisposeAsync();
    }
}
