using Google.Protobuf.Collections;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator.Client;

/// <summary>
/// Maps LibDse's records to the wire messages and back. Answers are checked as strictly as the server checks requests:
/// a malformed answer means the peer is not a coordinator this client can use, so it counts as unavailable.
/// </summary>
internal static class ClientWire
{
    public static Wire.ConnectRequest ToWire(ConnectRequest request)
    {
        var wire = new Wire.ConnectRequest { ObjectId = request.ObjectId };
        AddReports(wire.PersistedVersions, request.ObjectId, request.PersistedVersions);
        return wire;
    }

    public static Wire.ResyncRequest ToWire(ResyncRequest request)
    {
        var wire = new Wire.ResyncRequest { ObjectId = request.ObjectId, WorldLine = request.WorldLine };
        AddReports(wire.DurableVersions, request.ObjectId, request.DurableVersions);
        ArgumentNullException.ThrowIfNull(request.CommittedView);
        foreach (var (objectId, version) in request.CommittedView)
        {
            wire.CommittedView.Add(new Wire.ObjectVersion { ObjectId = objectId, Version = version });
        }

        return wire;
    }

    public static Wire.VersionReport ToWire(long objectId, VersionReport? report)
    {
        if (report is null)
        {
            // What the coordinator itself answers for a null entry in a listing.
            throw new DseCoordinatorException(CoordinatorErrorCode.InvalidRequest, $"Participant {objectId} listed a missing version report.");
        }

        ArgumentNullException.ThrowIfNull(report.Dependencies);
        var wire = new Wire.VersionReport { Version = report.Version, WorldLine = report.WorldLine };
        foreach (var d in report.Dependencies)
        {
            wire.Dependencies.Add(new Wire.ObjectVersion { ObjectId = d.ObjectId, Version = d.Version });
        }

        return wire;
    }

    public static ConnectResponse FromWire(Wire.ConnectResponse response, string target)
    {
        var state = FromWire(response.State, target, "ConnectResponse.state");
        return new ConnectResponse(response.WorldLine, response.RestoreVersion, response.IsRestart, state) { MustRetry = response.MustRetry };
    }

    public static ReportOutcome FromWire(Wire.ReportOutcome outcome, string target) => outcome switch
    {
        Wire.ReportOutcome.Accepted => ReportOutcome.Accepted,
        Wire.ReportOutcome.Duplicate => ReportOutcome.Duplicate,
        Wire.ReportOutcome.Stale => ReportOutcome.Stale,
        _ => throw Malformed(target, $"ReportPersistedResponse.outcome is {outcome}"),
    };

    public static ClusterState FromWire(Wire.ClusterState? state, string target, string field)
    {
        if (state is null)
        {
            throw Malformed(target, $"{field} is missing");
        }

        var decisions = new RollbackDecision[state.Decisions.Count];
        for (int i = 0; i < decisions.Length; i++)
        {
            decisions[i] = FromWire(state.Decisions[i], target, $"{field}.decisions[{i}]");
        }

        return new ClusterState(state.Epoch, state.WorldLine, decisions, ToDictionary(state.Committed, target, $"{field}.committed"))
        {
            Incarnation = state.Incarnation,
            IsRecovering = state.IsRecovering,
            Wanted = state.Wanted.Count == 0 ? ClusterState.NoneWanted : ToDictionary(state.Wanted, target, $"{field}.wanted"),
        };
    }

    public static RollbackDecision FromWire(Wire.RollbackDecision decision, string target, string field)
    {
        var reason = decision.Reason switch
        {
            Wire.RollbackReason.Restart => RollbackReason.Restart,
            Wire.RollbackReason.Removed => RollbackReason.Removed,
            Wire.RollbackReason.ColdStart => RollbackReason.ColdStart,
            _ => throw Malformed(target, $"{field}.reason is {decision.Reason}"),
        };
        if (decision.WorldLine <= 0)
        {
            throw Malformed(target, $"{field}.world_line is {decision.WorldLine}");
        }

        return new RollbackDecision(decision.WorldLine, decision.FailedObjectId, ToDictionary(decision.Cut, target, $"{field}.cut"), reason);
    }

    public static Dictionary<long, long> ToDictionary(RepeatedField<Wire.ObjectVersion> entries, string target, string field)
    {
        var result = new Dictionary<long, long>(entries.Count);
        foreach (var entry in entries)
        {
            if (!result.TryAdd(entry.ObjectId, entry.Version))
            {
                throw Malformed(target, $"{field} lists participant {entry.ObjectId} twice");
            }
        }

        return result;
    }

    private static void AddReports(RepeatedField<Wire.VersionReport> target, long objectId, IReadOnlyList<VersionReport> reports)
    {
        ArgumentNullException.ThrowIfNull(reports);
        foreach (var report in reports)
        {
            target.Add(ToWire(objectId, report));
        }
    }

    public static DseCoordinatorException Malformed(string target, string problem) =>
        new(CoordinatorErrorCode.Unavailable, $"The coordinator at {target} sent a malformed answer ({problem}); it is not a coordinator this client can use.");
}
