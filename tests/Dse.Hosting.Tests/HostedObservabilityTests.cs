using System.Diagnostics;
using System.Net;
using Dse.Grpc;
using Dse.Storage;
using Dse.Testing;
using Dse.Testing.Wire;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using OpenTelemetry;
using OpenTelemetry.Trace;

namespace Dse.Hosting.Tests;

/// <summary>
/// <c>AddDseTelemetry</c> on two hosted speculative services: <c>/metrics</c> serves the project's instruments in
/// Prometheus' format, and one trace crosses the gRPC call from Front to Back with the DSE vertex on each server span.
/// </summary>
public sealed class HostedObservabilityTests : IAsyncLifetime
{
    private readonly ClusterCoordinator _coordinator = new();
    private readonly List<IAsyncDisposable> _owned = [];
    private readonly List<Activity> _spans = [];

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        for (int i = _owned.Count - 1; i >= 0; i--)
        {
            await _owned[i].DisposeAsync();
        }

        await _coordinator.DisposeAsync();
    }

    [Fact]
    public async Task MetricsEndpoint_AfterCalls_ServesTheInstrumentsTheCallsRecorded()
    {
        var (front, _) = await StartPairAsync();
        var client = new Front.FrontClient(front.Channel);
        for (int i = 0; i < 3; i++)
        {
            await client.AddAsync(new AddRequest { Amount = 1 });
        }

        string scrape = await ScrapeAsync(front);

        // Prometheus' names: dots become underscores, counters end in _total, a unit of ms adds _milliseconds.
        Assert.Contains("dse_versions_persisted_total", scrape, StringComparison.Ordinal);
        Assert.Contains("dse_coordinator_reports_total", scrape, StringComparison.Ordinal);
        Assert.Contains("dse_barrier_wait_duration_milliseconds_bucket", scrape, StringComparison.Ordinal);
        Assert.Contains("dse_versions_uncommitted{", scrape, StringComparison.Ordinal);
        Assert.Contains("dse_object=\"2\"", scrape, StringComparison.Ordinal);
    }

    [Fact]
    public async Task MetricsEndpoint_TelemetryDisabled_NotMapped()
    {
        var server = await StartAsync(3, app => app.MapGrpcService<CounterBackService>(), _ => { }, enabled: false);

        using var http = Http2Client();
        using var response = await http.GetAsync(new Uri(server.Address, "/metrics"));

        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
    }

    [Fact]
    public async Task CallAcrossServices_Traced_OneTraceWithTheDseVertexOnEachServerSpan()
    {
        var (front, back) = await StartPairAsync();

        await new Front.FrontClient(front.Channel).AddAsync(new AddRequest { Amount = 2 });
        var frontSpan = await ServerSpanAsync(1);
        var backSpan = await ServerSpanAsync(2);

        Assert.Equal(frontSpan.TraceId, backSpan.TraceId);
        Assert.NotEqual(frontSpan.SpanId, backSpan.ParentSpanId);
        Assert.NotEqual(default, backSpan.ParentSpanId);
        long backVersion = Assert.IsType<long>(backSpan.GetTagItem(DseTelemetry.VersionAttribute));
        Assert.InRange(backVersion, 1, back.Services.GetRequiredService<CounterStateObject>().CurrentVersion);
        Assert.Equal(back.Services.GetRequiredService<CounterStateObject>().WorldLine, Assert.IsType<long>(backSpan.GetTagItem(DseTelemetry.WorldLineAttribute)));
        Assert.IsType<long>(frontSpan.GetTagItem(DseTelemetry.VersionAttribute));
    }

    /// <summary>The server span tagged with StateObject <paramref name="objectId"/>, once exported (a span ends after its reply is sent).</summary>
    private async Task<Activity> ServerSpanAsync(long objectId)
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        while (true)
        {
            lock (_spans)
            {
                foreach (var span in _spans)
                {
                    if (span.Kind == ActivityKind.Server && span.GetTagItem(DseTelemetry.ObjectAttribute) is long id && id == objectId)
                    {
                        return span;
                    }
                }
            }

            await Task.Delay(10, timeout.Token);
        }
    }

    private async Task<(LoopbackGrpcServer Front, LoopbackGrpcServer Back)> StartPairAsync()
    {
        var back = await StartAsync(2, app => app.MapGrpcService<CounterBackService>(), _ => { });
        var channel = GrpcChannel.ForAddress(back.Address);
        _owned.Add(new ChannelOwner(channel));
        var front = await StartAsync(
            1,
            app => app.MapGrpcService<CounterFrontService>(),
            services => services.AddSingleton(provider => new Back.BackClient(channel.Intercept(provider.GetRequiredService<DseClientInterceptor>()))));
        return (front, back);
    }

    private async Task<LoopbackGrpcServer> StartAsync(long id, Action<WebApplication> map, Action<IServiceCollection> configure, bool enabled = true)
    {
        var log = await SnapshotLog.OpenAsync(DseDevices.CreateInMemory(), new SnapshotLogOptions { OwnsDevice = true });
        var server = await LoopbackGrpcServer.StartAsync(
            app =>
            {
                map(app);
                app.MapDseMetrics();
            },
            services =>
            {
                configure(services);
                services
                    .AddDse(o =>
                    {
                        o.ObjectId = id;
                        o.GroupCommitPeriod = TimeSpan.FromMilliseconds(5);
                        o.ShutdownTimeout = TimeSpan.Zero;
                    })
                    .UseCoordinator(_coordinator)
                    .AddStateObject((_, o) => new CounterStateObject(o, log))
                    .AddGrpcInterceptors<CounterStateObject>();

                // Both hosts' providers see every span of this process; the Back host exports them once, here.
                var telemetry = services.AddDseTelemetry(configure: o =>
                {
                    o.Enabled = enabled;
                    o.Tracing = true;
                });
                if (id == 2)
                {
                    telemetry.WithTracing(tracing => tracing.AddInMemoryExporter(_spans));
                }
            });
        _owned.Add(server);
        await server.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync();
        return server;
    }

    private static async Task<string> ScrapeAsync(LoopbackGrpcServer server)
    {
        using var http = Http2Client();
        using var response = await http.GetAsync(new Uri(server.Address, "/metrics"));
        response.EnsureSuccessStatusCode();
        return await response.Content.ReadAsStringAsync();
    }

    /// <summary>The loopback servers speak plaintext HTTP/2 only (prior knowledge).</summary>
    private static HttpClient Http2Client() => new()
    {
        DefaultRequestVersion = HttpVersion.Version20,
        DefaultVersionPolicy = HttpVersionPolicy.RequestVersionExact,
    };

    private sealed class ChannelOwner(GrpcChannel channel) : IAsyncDisposable
    {
        public ValueTask DisposeAsync()
        {
            channel.Dispose();
            return ValueTask.CompletedTask;
        }
    }
}
