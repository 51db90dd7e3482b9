using OpenTelemetry.Metrics;
using OpenTelemetry.Trace;

namespace Dse.Coordinator.Host;

/// <summary>
/// The host's OpenTelemetry, read from the same keys as Dse.Hosting's <c>AddDseTelemetry</c> (docs/observability.md):
/// <c>Dse:Telemetry:Enabled</c> (default true), <c>Dse:Telemetry:Prometheus</c> (default true; <c>/metrics</c> on every
/// port, so on <c>--health-port</c>'s HTTP/1.1 too), <c>Dse:Telemetry:Otlp:Endpoint</c> or <c>OTEL_EXPORTER_OTLP_ENDPOINT</c>
/// for OTLP export of metrics and spans. Environment variables set them (<c>Dse__Telemetry__Enabled=false</c>).
/// </summary>
internal static class CoordinatorTelemetry
{
    /// <summary>Where the Prometheus scrape is served.</summary>
    public const string MetricsPath = "/metrics";

    /// <summary>Registers the providers the configuration asks for; returns whether <see cref="MetricsPath"/> is to be mapped.</summary>
    /// <exception cref="HostArgumentException">The OTLP endpoint is not an absolute http or https URL.</exception>
    public static bool Add(IServiceCollection services, IConfiguration configuration)
    {
        var section = configuration.GetSection("Dse:Telemetry");
        if (!section.GetValue("Enabled", true))
        {
            return false;
        }

        bool prometheus = section.GetValue("Prometheus", true);
        string? dseEndpoint = section["Otlp:Endpoint"];
        string? value = string.IsNullOrWhiteSpace(dseEndpoint) ? configuration["OTEL_EXPORTER_OTLP_ENDPOINT"] : dseEndpoint;
        Uri? endpoint = null;
        if (!string.IsNullOrWhiteSpace(value)
            && !(Uri.TryCreate(value.Trim(), UriKind.Absolute, out endpoint) && (endpoint.Scheme == Uri.UriSchemeHttp || endpoint.Scheme == Uri.UriSchemeHttps)))
        {
            throw new HostArgumentException($"{(string.IsNullOrWhiteSpace(dseEndpoint) ? "OTEL_EXPORTER_OTLP_ENDPOINT" : "Dse:Telemetry:Otlp:Endpoint")} must be the absolute http or https URL of an OTLP collector (got \"{value}\").");
        }

        bool explicitEndpoint = !string.IsNullOrWhiteSpace(dseEndpoint);
        var builder = services.AddOpenTelemetry();
        builder.WithMetrics(metrics =>
        {
            metrics.AddMeter("Dse", "Dse.*").AddAspNetCoreInstrumentation();
            if (prometheus)
            {
                metrics.AddPrometheusExporter();
            }

            if (endpoint is not null)
            {
                metrics.AddOtlpExporter(o => o.Endpoint = explicitEndpoint ? endpoint : o.Endpoint);
            }
        });

        if (endpoint is not null)
        {
            builder.WithTracing(tracing => tracing
                .AddSource("Dse", "Dse.*")
                .AddAspNetCoreInstrumentation()
                .AddOtlpExporter(o => o.Endpoint = explicitEndpoint ? endpoint : o.Endpoint));
        }

        return prometheus;
    }
}
