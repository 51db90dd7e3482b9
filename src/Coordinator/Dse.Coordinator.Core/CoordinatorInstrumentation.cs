using System.Diagnostics.Metrics;

namespace Dse;

/// <summary>The coordinator's meter and its instruments; every name is defined here (docs/metrics.md lists them).</summary>
public static class CoordinatorInstrumentation
{
    /// <summary>The name of the coordinator's <see cref="System.Diagnostics.Metrics.Meter"/>, for the in-process coordinator and the coordinator host alike.</summary>
    public const string MeterName = "Dse.Coordinator";

    internal static readonly Meter Meter = new(MeterName);

    /// <summary>Version reports received from participants (their rate is the coordinator's report rate).</summary>
    internal static readonly Counter<long> Reports = Meter.CreateCounter<long>("dse.coordinator.reports", "{report}", "Version reports received from participants.");
}
