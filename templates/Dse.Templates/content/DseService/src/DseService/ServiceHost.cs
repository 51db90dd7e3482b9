using System.Net;
using Dse.Storage;

namespace DseService;

/// <summary>
/// Builds the service's ASP.NET Core host: one DSE participant whose StateObject is a <see cref="CounterBook"/>.
/// Configuration (appsettings.json, environment, command line): <c>Dse:ObjectId</c> (unique in the cluster),
/// <c>Dse:Coordinator</c> (<c>in-process</c> or a coordinator host's URL), <c>Service:Port</c>, and
/// <c>Service:CertificatePath</c>/<c>Service:KeyPath</c> for TLS (without them the service listens in plaintext on
/// 127.0.0.1 only).
/// </summary>
public static class ServiceHost
{
    /// <summary>A builder with the configuration of <paramref name="args"/>; read it to open the storage, then call <see cref="Build"/>.</summary>
    public static WebApplicationBuilder CreateBuilder(string[] args) => WebApplication.CreateBuilder(args);

    /// <summary>The host over <paramref name="log"/>, which the caller owns and disposes after the host.</summary>
    public static WebApplication Build(WebApplicationBuilder builder, SnapshotLog log)
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentNullException.ThrowIfNull(log);
        var configuration = builder.Configuration;
        int port = configuration.GetValue("Service:Port", 5001);
        string? certificate = configuration["Service:CertificatePath"];
        string? key = configuration["Service:KeyPath"];
        var address = certificate is null ? IPAddress.Loopback : IPAddress.Any;
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.ListenDse(address, port, certificate, key));

        // AddDse binds the section "Dse" (ObjectId, Coordinator, GroupCommitPeriod, ...); the interceptors make every
        // gRPC service of this host speculative on behalf of the CounterBook; AddTelemetry reads "Dse:Telemetry" and
        // MapDseMetrics serves the metrics for a Prometheus scrape at /metrics.
        builder.Services.AddGrpc();
        builder.Services
            .AddDse()
            .AddStateObject((_, options) => new CounterBook(options, log))
            .AddGrpcInterceptors<CounterBook>()
            .AddTelemetry(configuration);

        var app = builder.Build();
        app.MapGrpcService<CountersService>();
        app.MapDseMetrics();
        return app;
    }

    /// <summary>The address a started host listens on.</summary>
    public static Uri AddressOf(WebApplication app)
    {
        ArgumentNullException.ThrowIfNull(app);
        return new Uri(app.Urls.First());
    }
}
