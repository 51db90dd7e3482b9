namespace Dse.Hosting;

/// <summary>What <c>AddDseTelemetry</c> registered, for <c>MapDseMetrics</c>: whether a Prometheus exporter is there to map.</summary>
internal sealed record DseTelemetryRegistration(bool Prometheus);
