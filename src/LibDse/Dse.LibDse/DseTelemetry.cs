using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace Dse;

/// <summary>The framework's one <see cref="Meter"/> and one <see cref="ActivitySource"/>, and the names of its instruments.</summary>
public static class DseTelemetry
{
    /// <summary>Name of the meter and the activity source.</summary>
    public const string Name = "Dse";

    /// <summary>The framework's meter.</summary>
    public static Meter Meter { get; } = new(Name);

    /// <summary>The framework's activity source.</summary>
    public static ActivitySource ActivitySource { get; } = new(Name);

    internal static Counter<long> VersionsPersisted { get; } = Meter.CreateCounter<long>("dse.versions.persisted", description: "Versions handed to Persist.");

    internal static Counter<long> VersionsRenumbered { get; } = Meter.CreateCounter<long>("dse.versions.renumbered", description: "Versions moved up to a sender's number without a persist, because no action had run in them (commit ordering).");

    internal static Counter<long> Rollbacks { get; } = Meter.CreateCounter<long>("dse.rollbacks", description: "Rollback decisions applied by restoring an earlier version.");

    internal static Counter<long> RollbacksSkipped { get; } = Meter.CreateCounter<long>("dse.rollbacks.skipped", description: "Rollback decisions a StateObject survived without restoring, as nothing it held depended on lost state.");

    internal static Counter<long> MessagesDiscarded { get; } = Meter.CreateCounter<long>("dse.messages.discarded", description: "Messages discarded because they came from rolled-back state.");

    internal static Counter<long> HeadersRejected { get; } = Meter.CreateCounter<long>("dse.headers.rejected", description: "Well-formed headers refused by the header rules (unknown participant, implausible version or world-line).");
}
