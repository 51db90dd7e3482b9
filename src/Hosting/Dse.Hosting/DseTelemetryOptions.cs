namespace Dse.Hosting;

/// <summary>
/// Options of <c>AddDseTelemetry</c>, bound from the configuration section <see cref="SectionName"/>
/// (<c>Dse:Telemetry</c>) when the call is given a configuration, then set in code.
/// </summary>
public sealed class DseTelemetryOptions
{
    /// <summary>The configuration section the options are bound from: <c>Dse:Telemetry</c>.</summary>
    public const string SectionName = "Dse:Telemetry";

    /// <summary>The path <c>MapDseMetrics</c> serves the Prometheus scrape on: <c>/metrics</c>.</summary>
    public const string MetricsPath = "/metrics";

    /// <summary>
    /// Whether telemetry is registered at all. Default <c>true</c>; <c>false</c> (key <c>Dse:Telemetry:Enabled</c>)
    /// registers no meter or tracer provider, so nothing listens and every instrument stays disabled, and
    /// <c>MapDseMetrics</c> maps nothing.
    /// </summary>
    public bool Enabled { get; set; } = true;

    /// <summary>Whether metrics are exported for a Prometheus scrape at <see cref="MetricsPath"/> (<c>MapDseMetrics</c>). Default <c>true</c>.</summary>
    public bool Prometheus { get; set; } = true;

    /// <summary>
    /// Whether spans are recorded: the project's activity sources, ASP.NET Core's server spans and gRPC client spans,
    /// carrying the DSE vertex as attributes. Default <c>null</c>: on exactly when an OTLP endpoint is configured, since
    /// a span nobody exports is work for nothing. Set <c>true</c> to add an exporter of your own to the builder returned.
    /// </summary>
    public bool? Tracing { get; set; }

    /// <summary>
    /// The <c>service.name</c> resource attribute of everything exported. Default <c>null</c>: OpenTelemetry's own
    /// default (<c>OTEL_SERVICE_NAME</c>, else <c>unknown_service</c> and the process name).
    /// </summary>
    public string? ServiceName { get; set; }

    /// <summary>The OTLP exporter (key <c>Dse:Telemetry:Otlp</c>).</summary>
    public DseOtlpOptions Otlp { get; set; } = new();

    /// <summary>The configuration key of option <paramref name="name"/>, as validation messages name it.</summary>
    internal static string Key(string name) => $"{SectionName}:{name}";
}
