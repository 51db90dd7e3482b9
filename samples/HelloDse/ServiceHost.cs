using System.Net;
using Dse.Hosting;
using Dse.Samples.HelloDse.Wire;
using Dse.Storage;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Samples.HelloDse;

/// <summary>
/// Builds the two services' ASP.NET hosts. Each host is one DSE participant: <c>AddDse</c> registers its StateObject
/// (built on the log the caller owns), connects it to the coordinator at start, and at stop persists and commits what
/// is outstanding and disposes it; <c>AddGrpcInterceptors</c> makes the host's gRPC services speculative;
/// <c>AddTelemetry</c> and <c>MapDseMetrics</c> serve the process's metrics at <c>/metrics</c>.
/// </summary>
public static class ServiceHost
{
    /// <summary>The Visits service on <paramref name="log"/>.</summary>
    /// <param name="log">The VisitBook's snapshot log; the caller owns it and disposes it after the host.</param>
    /// <param name="speculative">False runs the non-speculative baseline (every reply waits for its state to commit).</param>
    /// <param name="useCoordinator">Chooses the coordinator on the DSE builder (embedded or remote).</param>
    public static WebApplication Visits(SnapshotLog log, bool speculative, Action<IDseBuilder> useCoordinator)
    {
        ArgumentNullException.ThrowIfNull(useCoordinator);
        var builder = NewBuilder();
        var dse = builder.Services
            .AddDse(options =>
            {
                options.ObjectId = HelloDseIds.Visits;
                options.Speculative = speculative;
            })
            .AddStateObject((_, options) => new VisitBook(options, log))
            .AddGrpcInterceptors<VisitBook>()
            .AddTelemetry(builder.Configuration);
        useCoordinator(dse);

        var app = builder.Build();
        app.MapGrpcService<VisitsService>();
        app.MapDseMetrics();
        return app;
    }

    /// <summary>The Greeter service on <paramref name="log"/>, calling Visits at <paramref name="visits"/>.</summary>
    /// <param name="log">The GreetingCount's snapshot log; the caller owns it and disposes it after the host.</param>
    /// <param name="visits">The Visits service's address.</param>
    /// <param name="speculative">False runs the non-speculative baseline.</param>
    /// <param name="useCoordinator">Chooses the coordinator on the DSE builder (embedded or remote).</param>
    public static WebApplication Greeter(SnapshotLog log, Uri visits, bool speculative, Action<IDseBuilder> useCoordinator)
    {
        ArgumentNullException.ThrowIfNull(useCoordinator);
        var builder = NewBuilder();
        var dse = builder.Services
            .AddDse(options =>
            {
                options.ObjectId = HelloDseIds.Greeter;
                options.Speculative = speculative;
            })
            .AddStateObject((_, options) => new GreetingCount(options, log))
            .AddGrpcInterceptors<GreetingCount>()
            .AddTelemetry(builder.Configuration);
        useCoordinator(dse);

        // Calls from the Greeter's handlers carry its state: the client goes through the DseClientInterceptor that
        // AddGrpcInterceptors registered, on connections that concurrent first calls cannot break (docs/grpc.md).
        builder.Services.AddGrpcClient<Visits.VisitsClient>(client => client.Address = visits)
            .AddDseInterceptor();

        var app = builder.Build();
        app.MapGrpcService<GreeterService>();
        app.MapDseMetrics();
        return app;
    }

    /// <summary>The address a started host listens on.</summary>
    public static Uri AddressOf(WebApplication app)
    {
        ArgumentNullException.ThrowIfNull(app);
        return new Uri(app.Urls.First());
    }

    /// <summary>A host serving gRPC (HTTP/2 without TLS) on 127.0.0.1 at a free port; DSE's log lines and warnings to the console.</summary>
    private static WebApplicationBuilder NewBuilder()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen => listen.Protocols = HttpProtocols.Http2));
        builder.Logging.ClearProviders()
            .AddSimpleConsole(console => console.SingleLine = true)
            .SetMinimumLevel(LogLevel.Warning)
            .AddFilter("Dse", LogLevel.Information);
        return builder;
    }
}
