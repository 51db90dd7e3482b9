namespace Dse.Hosting;

/// <summary>Where <c>AddDseTelemetry</c> exports metrics and spans over OTLP (configuration section <c>Dse:Telemetry:Otlp</c>).</summary>
public sealed class DseOtlpOptions
{
    /// <summary>
    /// The collector's absolute http or https URL (key <c>Dse:Telemetry:Otlp:Endpoint</c>), for example
    /// <c>http://collector:4317</c> for OTLP over gRPC. Default <c>null</c>: the standard <c>OTEL_EXPORTER_OTLP_ENDPOINT</c>
    /// (from the configuration or the environment) if set, else no OTLP export. The protocol, headers and timeout follow
    /// the standard <c>OTEL_EXPORTER_OTLP_*</c> variables.
    /// </summary>
    public string? Endpoint { get; set; }
}
