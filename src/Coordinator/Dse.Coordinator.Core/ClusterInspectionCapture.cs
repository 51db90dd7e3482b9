namespace Dse;

/// <summary>Builds a <see cref="ClusterInspection"/> from a coordinator's collaborators.</summary>
internal static class ClusterInspectionCapture
{
    /// <summary>Copies the coordinator's collaborators; the caller holds the coordinator's lock.</summary>
    public static ClusterInspection Capture(
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
                newest,
                member.Statistics,
                member.Statistics is null ? null : time.GetElapsedTime(member.StatisticsReceived)));
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
