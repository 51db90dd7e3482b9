using Dse.Grpc;
using Dse.Services.Grpc.V1;
using Dse.Testing;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Services.Grpc.Tests;

/// <summary>A service of Dse.Services.Grpc on a <see cref="LoopbackGrpcServer"/>: with the DSE server interceptor, or the manual KV.</summary>
public sealed class ServicesServer : IAsyncDisposable
{
    private readonly LoopbackGrpcServer _server;

    private ServicesServer(LoopbackGrpcServer server)
    {
        _server = server;
    }

    /// <summary>What the server logged (Dse categories from Debug, gRPC's server events from Information, everything else from Warning).</summary>
    public LogCapture Logs => _server.Logs;

    /// <summary>A channel without DSE: calls from a non-speculative client.</summary>
    public GrpcChannel Channel => _server.Channel;

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

    private static async Task<ServicesServer> StartAsync(Action<IServiceCollection> configure, Action<WebApplication> map) =>
        new(await LoopbackGrpcServer.StartAsync(map, services =>
        {
            BadInputLogging.Capture(services);
            configure(services);
        }));

    public ValueTask DisposeAsync() => _server.DisposeAsync();
}
