using Dse.Hosting;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Maps the Prometheus scrape endpoint that <c>AddDseTelemetry</c> prepared.</summary>
public static class DseTelemetryEndpointRouteBuilderExtensions
{
    /// <summary>
    /// Serves the host's metrics in Prometheus' text format at <see cref="DseTelemetryOptions.MetricsPath"/>
    /// (<c>/metrics</c>) after <c>AddDseTelemetry</c>; maps nothing when telemetry or its Prometheus exporter is off
    /// (<c>Dse:Telemetry:Enabled</c>, <c>Dse:Telemetry:Prometheus</c>) or <c>AddDseTelemetry</c> was not called.
    /// Prometheus scrapes over HTTP/1.1: serve the path on an endpoint that speaks it (TLS with HTTP/1.1 and HTTP/2,
    /// or a plaintext port of its own), not only on a plaintext HTTP/2 gRPC port.
    /// </summary>
    /// <param name="endpoints">The application's endpoints.</param>
    /// <returns>The endpoint's convention builder, or <c>null</c> when nothing was mapped.</returns>
    public static IEndpointConventionBuilder? MapDseMetrics(this IEndpointRouteBuilder endpoints)
    {
        ArgumentNullException.ThrowIfNull(endpoints);
        return endpoints.ServiceProvider.GetService<DseTelemetryRegistration>() is { Prometheus: true }
            ? endpoints.MapPrometheusScrapingEndpoint(DseTelemetryOptions.MetricsPath)
            : null;
    }
}
