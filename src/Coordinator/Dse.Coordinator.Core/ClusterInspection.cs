namespace Dse;

/// <summary>
/// A read-only copy of a <see cref="ClusterCoordinator"/>'s view at one moment (<see cref="ClusterCoordinator.Inspect"/>),
/// for dashboards and tools: membership with liveness, the graph view and the retained decisions with what each cost.
/// Nothing in it is shared with the coordinator.
/// </summary>
/// <param name="Incarnation">The coordinator incarnation.</param>
/// <param name="Epoch">The epoch of the published state.</param>
/// <param name="WorldLine">The current world-line (0 before any decision).</param>
/// <param name="IsRecovering">Whether the coordinator waits for its participants' answers after its own restart.</param>
/// <param name="Fault">Why the coordinator stopped serving, or <c>null</c> while it serves.</param>
/// <param name="Participants">Every registered participant, removed ones included, by id.</param>
/// <param name="Decisions">The retained rollback decisions, oldest first.</param>
public sealed record ClusterInspection(
    long Incarnation,
    long Epoch,
    long WorldLine,
    bool IsRecovering,
    string? Fault,
    IReadOnlyList<ParticipantInspection> Participants,
    IReadOnlyList<DecisionInspection> Decisions)
{
    /// <summary>Copies the coordinator's collaborators; the caller holds the coordinator's lock.</summary>
    internal static ClusterInspection Capture(
        ClusterMembers members, DependencyGraph graph, DecisionHistory history, TimeProvider time, int maxVersionsPerParticipant,
        long incarnation, long epoch, bool isRecovering, string? fault)
    {
        var participants = new List<ParticipantInspection>(members.Count);
        foreach (var (id, member) in members.All)
        {
            var (count, newest) = graph.UncommittedReports(id, maxVersionsPerParticipant);
            participants.Add(new ParticipantInspection(
                id,
                member.Removed,
                member.RemovedBecause,
                time.GetElapsedTime(member.LastSeen),
                graph.CommittedVersion(id),
                graph.LatestVersion(id),
                graph.ReportedWorldLine(id),
                count,
                newest));
        }

        participants.Sort(static (a, b) => a.ObjectId.CompareTo(b.ObjectId));
        var decisions = new List<DecisionInspection>(history.Retained.Count);
        foreach (var decision in history.Retained)
        {
            decisions.Add(new DecisionInspection(decision, history.ReportedBefore(decision.WorldLine)));
        }

        return new ClusterInspection(incarnation, epoch, history.WorldLine, isRecovering, fault, participants, decisions);
    }
}
