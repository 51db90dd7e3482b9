using Google.Protobuf.Collections;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator;

/// <summary>
/// Checks every field of a request and maps it to LibDse's records, and maps answers back. A field that breaks the
/// wire contract (protos/dse/coordinator/v1/coordinator.proto) is refused with
/// <see cref="CoordinatorErrorCode.InvalidRequest"/> and a message naming it, before the coordinator sees anything.
/// Rules the coordinator itself enforces (ascending listings, world-lines it has not decided) are left to it, so that
/// remote and embedded callers get the same answer.
/// </summary>
internal static class ServerWire
{
    private const int SmallFragment = 16;

    public static ConnectRequest FromWire(Wire.ConnectRequest request)
    {
        long id = ObjectId(request.HasObjectId, request.ObjectId, "ConnectRequest.object_id");
        return new ConnectRequest(id, Reports(request.PersistedVersions, "ConnectRequest.persisted_versions"));
    }

    public static (long ObjectId, VersionReport Report) FromWire(Wire.ReportPersistedRequest request)
    {
        long id = ObjectId(request.HasObjectId, request.ObjectId, "ReportPersistedRequest.object_id");
        if (request.Report is null)
        {
            throw Invalid("ReportPersistedRequest.report is missing.");
        }

        return (id, Report(request.Report, "ReportPersistedRequest.report"));
    }

    public static (long ObjectId, long WorldLine, long KeptThrough) FromWire(Wire.AcknowledgeRollbackRequest request)
    {
        long id = ObjectId(request.HasObjectId, request.ObjectId, "AcknowledgeRollbackRequest.object_id");
        long worldLine = NonNegative(request.WorldLine, "AcknowledgeRollbackRequest.world_line", "world-lines");
        long keptThrough = NonNegative(request.KeptThrough, "AcknowledgeRollbackRequest.kept_through", "versions");
        return (id, worldLine, keptThrough);
    }

    public static ResyncRequest FromWire(Wire.ResyncRequest request)
    {
        long id = ObjectId(request.HasObjectId, request.ObjectId, "ResyncRequest.object_id");
        long worldLine = NonNegative(request.WorldLine, "ResyncRequest.world_line", "world-lines");
        var versions = Reports(request.DurableVersions, "ResyncRequest.durable_versions");
        var view = new Dictionary<long, long>(request.CommittedView.Count);
        for (int i = 0; i < request.CommittedView.Count; i++)
        {
            var entry = request.CommittedView[i];
            if (entry.ObjectId < 0)
            {
                throw Invalid($"ResyncRequest.committed_view[{i}].object_id is {entry.ObjectId}; participant ids are non-negative.");
            }

            if (entry.Version < 0)
            {
                throw Invalid($"ResyncRequest.committed_view[{i}].version is {entry.Version}; versions are non-negative.");
            }

            if (!view.TryAdd(entry.ObjectId, entry.Version))
            {
                throw Invalid($"ResyncRequest.committed_view lists participant {entry.ObjectId} twice.");
            }
        }

        return new ResyncRequest(id, worldLine, versions, view);
    }

    /// <summary>The participant and the statistics it reports, if any.</summary>
    public static (long ObjectId, ParticipantStatistics? Statistics) FromWire(Wire.HeartbeatRequest request)
    {
        long id = ObjectId(request.HasObjectId, request.ObjectId, "HeartbeatRequest.object_id");
        if (request.Statistics is null)
        {
            return (id, null);
        }

        var statistics = Wire.StatisticsWire.FromWire(request.Statistics, out string? problem);
        return statistics is not null ? (id, statistics) : throw Invalid($"HeartbeatRequest.statistics: {problem}");
    }

    /// <summary>How many uncommitted versions per participant an inspection copies.</summary>
    public static int FromWire(Wire.InspectRequest request) =>
        request.MaxVersionsPerParticipant is >= 0 and <= InspectWire.MaxVersionsPerParticipant
            ? request.MaxVersionsPerParticipant
            : throw Invalid($"InspectRequest.max_versions_per_participant is {request.MaxVersionsPerParticipant}; it is 0 to {InspectWire.MaxVersionsPerParticipant}.");

    public static long FromWire(Wire.RemoveParticipantRequest request) => ObjectId(request.HasObjectId, request.ObjectId, "RemoveParticipantRequest.object_id");

    /// <summary>The epoch to wait past, and how long to wait: the client's wish, capped at <paramref name="cap"/>.</summary>
    public static (long KnownEpoch, TimeSpan Wait) FromWire(Wire.WaitForChangeRequest request, TimeSpan cap)
    {
        long known = NonNegative(request.KnownEpoch, "WaitForChangeRequest.known_epoch", "epochs");
        if (request.MaxWait is not { } maxWait)
        {
            return (known, cap);
        }

        TimeSpan wait;
        try
        {
            wait = maxWait.ToTimeSpan();
        }
        catch (InvalidOperationException)
        {
            throw Invalid($"WaitForChangeRequest.max_wait is not a valid duration ({maxWait.Seconds} s, {maxWait.Nanos} ns).");
        }

        if (wait < TimeSpan.Zero)
        {
            throw Invalid($"WaitForChangeRequest.max_wait is {wait}; it must not be negative.");
        }

        return (known, wait == TimeSpan.Zero || wait > cap ? cap : wait);
    }

    public static Wire.ConnectResponse ToWire(ConnectResponse response) => new()
    {
        WorldLine = response.WorldLine,
        RestoreVersion = response.RestoreVersion,
        IsRestart = response.IsRestart,
        State = ToWire(response.State),
        MustRetry = response.MustRetry,
    };

    public static Wire.ReportOutcome ToWire(ReportOutcome outcome) => outcome switch
    {
        ReportOutcome.Accepted => Wire.ReportOutcome.Accepted,
        ReportOutcome.Duplicate => Wire.ReportOutcome.Duplicate,
        ReportOutcome.Stale => Wire.ReportOutcome.Stale,
        _ => throw new ArgumentOutOfRangeException(nameof(outcome), outcome, "Unknown report outcome."),
    };

    public static Wire.ClusterState ToWire(ClusterState state)
    {
        var wire = new Wire.ClusterState
        {
            Epoch = state.Epoch,
            WorldLine = state.WorldLine,
            Incarnation = state.Incarnation,
            IsRecovering = state.IsRecovering,
        };
        foreach (var decision in state.Decisions)
        {
            wire.Decisions.Add(ToWire(decision));
        }

        AddEntries(wire.Committed, state.Committed);
        AddEntries(wire.Wanted, state.Wanted);
        return wire;
    }

    public static Wire.RollbackDecision ToWire(RollbackDecision decision)
    {
        var wire = new Wire.RollbackDecision
        {
            WorldLine = decision.WorldLine,
            FailedObjectId = decision.FailedObjectId,
            Reason = decision.Reason switch
            {
                RollbackReason.Restart => Wire.RollbackReason.Restart,
                RollbackReason.Removed => Wire.RollbackReason.Removed,
                RollbackReason.ColdStart => Wire.RollbackReason.ColdStart,
                _ => throw new ArgumentOutOfRangeException(nameof(decision), decision.Reason, "Unknown rollback reason."),
            },
        };
        AddEntries(wire.Cut, decision.Cut);
        return wire;
    }

    public static void AddEntries(RepeatedField<Wire.ObjectVersion> target, IReadOnlyDictionary<long, long> source)
    {
        foreach (var (objectId, version) in source)
        {
            target.Add(new Wire.ObjectVersion { ObjectId = objectId, Version = version });
        }
    }

    private static VersionReport[] Reports(RepeatedField<Wire.VersionReport> reports, string field)
    {
        var result = new VersionReport[reports.Count];
        for (int i = 0; i < result.Length; i++)
        {
            result[i] = Report(reports[i], field, i);
        }

        return result;
    }

    /// <summary>One report; <paramref name="index"/> is its position in a listing, or -1. Messages are built only on failure.</summary>
    private static VersionReport Report(Wire.VersionReport report, string field, int index = -1)
    {
        if (report.Version <= 0)
        {
            throw Invalid($"{Name(field, index)}.version is {report.Version}; versions start at 1.");
        }

        if (report.WorldLine < 0)
        {
            throw Invalid($"{Name(field, index)}.world_line is {report.WorldLine}; world-lines are non-negative.");
        }

        var dependencies = new Dependency[report.Dependencies.Count];

        // Fragments are small (one entry per peer): a scan finds duplicates without allocating; a set bounds the work
        // for a large one.
        var seen = dependencies.Length > SmallFragment ? new HashSet<long>(dependencies.Length) : null;
        for (int i = 0; i < dependencies.Length; i++)
        {
            var d = report.Dependencies[i];
            if (d.ObjectId < 0)
            {
                throw Invalid($"{Name(field, index)}.dependencies[{i}].object_id is {d.ObjectId}; participant ids are non-negative.");
            }

            if (d.Version < 0)
            {
                throw Invalid($"{Name(field, index)}.dependencies[{i}].version is {d.Version}; versions are non-negative.");
            }

            if (seen is not null ? !seen.Add(d.ObjectId) : Contains(dependencies.AsSpan(0, i), d.ObjectId))
            {
                throw Invalid($"{Name(field, index)}.dependencies lists participant {d.ObjectId} twice; a fragment has one entry per participant.");
            }

            dependencies[i] = new Dependency(d.ObjectId, d.Version);
        }

        return new VersionReport(report.Version, report.WorldLine, dependencies);
    }

    private static string Name(string field, int index) => index < 0 ? field : $"{field}[{index}]";

    private static bool Contains(ReadOnlySpan<Dependency> dependencies, long objectId)
    {
        foreach (var d in dependencies)
        {
            if (d.ObjectId == objectId)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// The participant a request names. The field must be on the wire: proto3 reads an absent one as 0, which is a valid
    /// id, so without the check any bytes that parse would name participant 0.
    /// </summary>
    private static long ObjectId(bool present, long value, string field)
    {
        if (!present)
        {
            throw Invalid($"{field} is missing; a request names its participant, id 0 included.");
        }

        return value >= 0 ? value : throw Invalid($"{field} is {value}; participant ids are non-negative.");
    }

    private static long NonNegative(long value, string field, string what) =>
        value >= 0 ? value : throw Invalid($"{field} is {value}; {what} are non-negative.");

    private static DseCoordinatorException Invalid(string message) => new(CoordinatorErrorCode.InvalidRequest, message);
}
