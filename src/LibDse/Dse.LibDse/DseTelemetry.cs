using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Runtime.CompilerServices;

namespace Dse;

/// <summary>The framework's one <see cref="Meter"/> and one <see cref="ActivitySource"/>, and the names of its instruments.</summary>
public static class DseTelemetry
{
    /// <summary>Name of the meter and the activity source.</summary>
    public const string Name = "Dse";

    /// <summary>The trace attribute naming the StateObject (the vertex's object id) a call ran in.</summary>
    public const string ObjectAttribute = "dse.object";

    /// <summary>The trace attribute naming the world-line of the vertex a call ran in.</summary>
    public const string WorldLineAttribute = "dse.world_line";

    /// <summary>The trace attribute naming the version of the vertex a call ran in.</summary>
    public const string VersionAttribute = "dse.version";

    // The connected StateObjects the uncommitted-versions gauge reads; weak, so an undisposed one is not kept alive.
    private static readonly ConditionalWeakTable<StateObject, object?> Connected = [];

    /// <summary>The framework's meter.</summary>
    public static Meter Meter { get; } = new(Name);

    /// <summary>The framework's activity source.</summary>
    public static ActivitySource ActivitySource { get; } = new(Name);

    internal static Counter<long> VersionsPersisted { get; } = Meter.CreateCounter<long>("dse.versions.persisted", "{version}", "Versions handed to Persist.");

    internal static Counter<long> VersionsRenumbered { get; } = Meter.CreateCounter<long>("dse.versions.renumbered", "{version}", "Versions moved up to a sender's number without a persist, because no action had run in them (commit ordering).");

    internal static Counter<long> Rollbacks { get; } = Meter.CreateCounter<long>("dse.rollbacks", "{rollback}", "Rollback decisions applied by restoring an earlier version.");

    internal static Counter<long> RollbacksSkipped { get; } = Meter.CreateCounter<long>("dse.rollbacks.skipped", "{rollback}", "Rollback decisions a StateObject survived without restoring, as nothing it held depended on lost state.");

    internal static Counter<long> MessagesDiscarded { get; } = Meter.CreateCounter<long>("dse.messages.discarded", "{message}", "Messages discarded because they came from rolled-back state.");

    internal static Counter<long> HeadersRejected { get; } = Meter.CreateCounter<long>("dse.headers.rejected", "{header}", "Well-formed headers refused by the header rules (unknown participant, implausible version or world-line).");

    internal static Histogram<long> RollbackSize { get; } = Meter.CreateHistogram<long>("dse.rollback.size", "{version}", "Versions a restoring rollback discarded: the current version before it minus the version restored.");

    internal static Histogram<double> BarrierWait { get; } = Meter.CreateHistogram<double>("dse.barrier.wait.duration", "ms", "Time a barrier (Sthread.BarrierAsync, StateObject.WaitForCommitAsync) waited for what it observed to become recoverable.");

    internal static Histogram<double> CommitLag { get; } = Meter.CreateHistogram<double>("dse.commit.lag", "ms",
        "Boundary lag per committed version (tag dse.object): from handing the version to Persist until the StateObject applied a committed view that covers it.");

    internal static ObservableGauge<long> VersionsUncommitted { get; } = Meter.CreateObservableGauge<long>("dse.versions.uncommitted", ObserveUncommitted, "{version}",
        "Commit lag of each connected StateObject (tag dse.object): its current version minus its highest version inside the recoverable boundary.");

    /// <summary>
    /// Tags <paramref name="activity"/> with the DSE vertex (<see cref="ObjectAttribute"/>, <see cref="WorldLineAttribute"/>,
    /// <see cref="VersionAttribute"/>) when it records attributes; does nothing for <c>null</c> or an activity nobody records.
    /// </summary>
    /// <param name="activity">The activity, usually <see cref="Activity.Current"/>.</param>
    /// <param name="objectId">The StateObject's id.</param>
    /// <param name="worldLine">Its world-line.</param>
    /// <param name="version">The version the work ran in.</param>
    public static void TagVertex(Activity? activity, long objectId, long worldLine, long version)
    {
        if (activity is { IsAllDataRequested: true })
        {
            activity.SetTag(ObjectAttribute, objectId);
            activity.SetTag(WorldLineAttribute, worldLine);
            activity.SetTag(VersionAttribute, version);
        }
    }

    /// <summary>The start of a barrier wait, for <see cref="EndBarrierWait"/> (a Stopwatch timestamp).</summary>
    internal static long StartBarrierWait() => Stopwatch.GetTimestamp();

    /// <summary>
    /// Records the wait begun at <paramref name="started"/> in the participant's own histogram, which its heartbeats
    /// report, and in <c>dse.barrier.wait.duration</c> when something listens.
    /// </summary>
    internal static void EndBarrierWait(long started, ParticipantStatisticsSource statistics)
    {
        statistics.RecordBarrierWait(started);
        if (BarrierWait.Enabled)
        {
            BarrierWait.Record(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
        }
    }

    /// <summary>Counts a restoring rollback in <c>dse.rollbacks</c> and its size in <c>dse.rollback.size</c>.</summary>
    internal static void RecordRollback(long versionsLost)
    {
        Rollbacks.Add(1);
        if (RollbackSize.Enabled)
        {
            RollbackSize.Record(Math.Max(0, versionsLost));
        }
    }

    /// <summary>Counts <paramref name="stateObject"/> in <c>dse.versions.uncommitted</c> from now on (it connected).</summary>
    internal static void Track(StateObject stateObject) => Connected.AddOrUpdate(stateObject, null);

    /// <summary>Stops counting <paramref name="stateObject"/> (it was disposed).</summary>
    internal static void Untrack(StateObject stateObject) => Connected.Remove(stateObject);

    private static IEnumerable<Measurement<long>> ObserveUncommitted()
    {
        var measurements = new List<Measurement<long>>();
        foreach (var (stateObject, _) in Connected)
        {
            long lag = stateObject.CurrentVersion - stateObject.CommittedVersion;
            measurements.Add(new Measurement<long>(Math.Max(0, lag), new KeyValuePair<string, object?>(ObjectAttribute, stateObject.Id)));
        }

        return measurements;
    }
}
