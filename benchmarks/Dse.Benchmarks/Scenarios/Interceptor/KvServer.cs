using System.Net;
using Dse.Grpc;
using Dse.Services;
using Dse.Services.Grpc;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Benchmarks.Scenarios.Interceptor;

/// <summary>One of the compared KV servers on a free port of 127.0.0.1 (HTTP/2 cleartext), with its store.</summary>
internal sealed class KvServer : IAsyncDisposable
{
    private readonly WebApplication _app;
    private readonly IAsyncDisposable _store;

    private KvServer(KvServerVariant variant, WebApplication app, IAsyncDisposable store, Uri address)
    {
        Variant = variant;
        _app = app;
        _store = store;
        Address = address;
    }

    public KvServerVariant Variant { get; }

    public Uri Address { get; }

    /// <summary>Starts the no-DSE server over <paramref name="store"/>.</summary>
    public static Task<KvServer> StartNoDseAsync(PlainKvStore store) =>
        StartAsync(KvServerVariant.NoDse, store, services =>
        {
            services.AddSingleton(store);
            services.AddGrpc();
        }, app => app.MapGrpcService<NoDseKvService>());

    /// <summary>Starts a DSE server over <paramref name="kv"/>: by hand, or plain behind the interceptor.</summary>
    public static Task<KvServer> StartDseAsync(SpeculativeKv kv, bool manual) =>
        StartAsync(manual ? KvServerVariant.Manual : KvServerVariant.Interceptor, kv, services =>
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

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync().ConfigureAwait(false);
        await _app.DisposeAsync().ConfigureAwait(false);
        await _store.DisposeAsync().ConfigureAwait(false);
    }

    private static async Task<KvServer> StartAsync(KvServerVariant variant, IAsyncDisposable store, Action<IServiceCollection> configure, Action<WebApplication> map)
    {
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [] });
        builder.Logging.ClearProviders();
        ListenOptions? endpoint = null;
        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            // Room for every caller's stream on one connection.
            kestrel.Limits.Http2.MaxStreamsPerConnection = 1024;
            kestrel.Listen(IPAddress.Loopback, 0, listen =>
            {
                listen.Protocols = HttpProtocols.Http2;
                endpoint = listen;
            });
        });
        configure(builder.Services);
        var app = builder.Build();
        map(app);
        await app.StartAsync().ConfigureAwait(false);
        return new KvServer(variant, app, store, new Uri($"http://127.0.0.1:{((IPEndPoint)endpoint!.EndPoint).Port}"));
    }
}
