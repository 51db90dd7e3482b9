using Dse.Hosting;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection.Extensions;
using OpenTelemetry;
using OpenTelemetry.Exporter;
using OpenTelemetry.Metrics;
using OpenTelemetry.Resources;
using OpenTelemetry.Trace;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Wires the project's meters and activity sources into OpenTelemetry with one call.</summary>
public static class DseTelemetryServiceCollectionExtensions
{
    /// <summary>
    /// The meters and activity sources the project publishes: <c>Dse</c> and every <c>Dse.*</c> (docs/metrics.md
    /// lists them: <c>Dse.Grpc</c>, <c>Dse.Coordinator</c>, <c>Dse.Darq</c>, <c>Dse.Darq.Grpc</c>).
    /// </summary>
    public static IReadOnlyList<string> SourceNames { get; } = ["Dse", "Dse.*"];

    /// <summary>
    /// Registers OpenTelemetry for the project: a meter provider over every project meter (and ASP.NET Core's server
    /// metrics) with a Prometheus exporter for <c>MapDseMetrics</c>; a tracer provider over the project's activity
    /// sources, ASP.NET Core's server spans and gRPC client spans (W3C trace context crosses gRPC calls), when
    /// <see cref="DseTelemetryOptions.Tracing"/> says so; and OTLP export of both when an endpoint is configured
    /// (<c>Dse:Telemetry:Otlp:Endpoint</c> or <c>OTEL_EXPORTER_OTLP_ENDPOINT</c>). With
    /// <c>Dse:Telemetry:Enabled = false</c> it registers no provider. Add exporters or instrumentation of your own on
    /// the returned builder (<c>WithTracing</c>, <c>WithMetrics</c>).
    /// </summary>
    /// <param name="services">The services.</param>
    /// <param name="configuration">The host's configuration: <see cref="DseTelemetryOptions"/> are bound from its <c>Dse:Telemetry</c> section; <c>null</c> keeps the defaults.</param>
    /// <param name="configure">Sets options in code, after the configuration was bound.</param>
    /// <returns>OpenTelemetry's builder.</returns>
    /// <exception cref="ArgumentException">The OTLP endpoint is not an absolute http or https URL; the message names its key.</exception>
    public static IOpenTelemetryBuilder AddDseTelemetry(this IServiceCollection services, IConfiguration? configuration = null, Action<DseTelemetryOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        var options = new DseTelemetryOptions();
        configuration?.GetSection(DseTelemetryOptions.SectionName).Bind(options);
        configure?.Invoke(options);
        var builder = services.AddOpenTelemetry();
        if (!options.Enabled)
        {
            return builder;
        }

        var endpoint = OtlpEndpoint(options, configuration, out bool fromDseKey);
        services.TryAddSingleton(new DseTelemetryRegistration(options.Prometheus));
        if (options.ServiceName is { Length: > 0 } serviceName)
        {
            builder.ConfigureResource(resource => resource.AddService(serviceName));
        }

        builder.WithMetrics(metrics =>
        {
            metrics.AddMeter([.. SourceNames]).AddAspNetCoreInstrumentation();
            if (options.Prometheus)
            {
                metrics.AddPrometheusExporter();
            }

            if (endpoint is not null)
            {
                metrics.AddOtlpExporter(otlp => Apply(otlp, endpoint, fromDseKey));
            }
        });

        if (options.Tracing ?? endpoint is not null)
        {
            builder.WithTracing(tracing =>
            {
                tracing.AddSource([.. SourceNames]).AddAspNetCoreInstrumentation().AddGrpcClientInstrumentation();
                if (endpoint is not null)
                {
                    tracing.AddOtlpExporter(otlp => Apply(otlp, endpoint, fromDseKey));
                }
            });
        }

        return builder;
    }

    /// <summary>
    /// Registers OpenTelemetry for the project (<see cref="AddDseTelemetry(IServiceCollection, IConfiguration?, Action{DseTelemetryOptions}?)"/>)
    /// in the services of <paramref name="builder"/>.
    /// </summary>
    /// <param name="builder">The DSE builder.</param>
    /// <param name="configuration">The host's configuration, or <c>null</c>.</param>
    /// <param name="configure">Sets options in code, after the configuration was bound.</param>
    /// <returns>The DSE builder.</returns>
    public static IDseBuilder AddTelemetry(this IDseBuilder builder, IConfiguration? configuration = null, Action<DseTelemetryOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        builder.Services.AddDseTelemetry(configuration, configure);
        return builder;
    }

    /// <summary>The OTLP endpoint: the Dse key, else the standard variable; <c>null</c> for none.</summary>
    private static Uri? OtlpEndpoint(DseTelemetryOptions options, IConfiguration? configuration, out bool fromDseKey)
    {
        fromDseKey = !string.IsNullOrWhiteSpace(options.Otlp.Endpoint);
        string? value = fromDseKey
            ? options.Otlp.Endpoint
            : configuration?["OTEL_EXPORTER_OTLP_ENDPOINT"] ?? Environment.GetEnvironmentVariable("OTEL_EXPORTER_OTLP_ENDPOINT");
        if (string.IsNullOrWhiteSpace(value))
        {
            return null;
        }

        string key = fromDseKey ? DseTelemetryOptions.Key("Otlp:Endpoint") : "OTEL_EXPORTER_OTLP_ENDPOINT";
        return Uri.TryCreate(value.Trim(), UriKind.Absolute, out var uri) && (uri.Scheme == Uri.UriSchemeHttp || uri.Scheme == Uri.UriSchemeHttps)
            ? uri
            : throw new ArgumentException($"{key} must be the absolute http or https URL of an OTLP collector (got \"{value}\").", nameof(configuration));
    }

    /// <summary>Points the exporter at the Dse key's endpoint; the standard variables configure it by themselves.</summary>
    private static void Apply(OtlpExporterOptions otlp, Uri endpoint, bool fromDseKey)
    {
        if (fromDseKey)
        {
            otlp.Endpoint = endpoint;
        }
    }
}
