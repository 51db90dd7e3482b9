using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator.Client;

/// <summary>
/// Reads the Inspect RPC's answer into a <see cref="ClusterInspection"/>, checked as strictly as every other answer:
/// a malformed one means the peer is not a coordinator this client can use.
/// </summary>
internal static class InspectionWire
{
    /// <summary>The most uncommitted versions per participant the server copies.</summary>
    public const int MaxVersionsPerParticipant = 1024;

    public static ClusterInspection FromWire(Wire.InspectResponse response, string target)
    {
        var participants = new ParticipantInspection[response.Participants.Count];
        var ids = new HashSet<long>(participants.Length);
        for (int i = 0; i < participants.Length; i++)
        {
            participants[i] = FromWire(response.Participants[i], target, $"InspectResponse.participants[{i}]");
            if (!ids.Add(participants[i].ObjectId))
            {
                throw ClientWire.Malformed(target, $"InspectResponse.participants lists participant {participants[i].ObjectId} twice");
            }
        }

        var decisions = new DecisionInspection[response.Decisions.Count];
        for (int i = 0; i < decisions.Length; i++)
        {
            var view = response.Decisions[i];
            string field = $"InspectResponse.decisions[{i}]";
            if (view.Decision is null)
            {
                throw ClientWire.Malformed(target, $"{field}.decision is missing");
            }

            var decision = ClientWire.FromWire(view.Decision, target, $"{field}.decision");
            var before = view.ReportedBeforeKnown ? ClientWire.ToDictionary(view.ReportedBefore, target, $"{field}.reported_before") : null;
            decisions[i] = new DecisionInspection(decision, before);
        }

        return new ClusterInspection(
            response.Incarnation,
            response.Epoch,
            response.WorldLine,
            response.IsRecovering,
            response.Fault.Length == 0 ? null : response.Fault,
            participants,
            decisions);
    }

    private static ParticipantInspection FromWire(Wire.ParticipantView view, string target, string field)
    {
        if (view.ObjectId < 0 || view.Committed < 0 || view.Persisted < 0 || view.ReportedWorldLine < 0 || view.UncommittedCount < 0)
        {
            throw ClientWire.Malformed(target, $"{field} has a negative id, version, world-line or count");
        }

        var sinceHeard = Wire.StatisticsWire.FromWire(view.SinceHeard)
            ?? throw ClientWire.Malformed(target, $"{field}.since_heard is missing or invalid");
        var uncommitted = new VersionReport[view.Uncommitted.Count];
        for (int i = 0; i < uncommitted.Length; i++)
        {
            var report = view.Uncommitted[i];
            var dependencies = new Dependency[report.Dependencies.Count];
            for (int j = 0; j < dependencies.Length; j++)
            {
                dependencies[j] = new Dependency(report.Dependencies[j].ObjectId, report.Dependencies[j].Version);
            }

            uncommitted[i] = new VersionReport(report.Version, report.WorldLine, dependencies);
        }

        ParticipantStatistics? statistics = null;
        TimeSpan? age = null;
        if (view.Statistics is not null)
        {
            statistics = Wire.StatisticsWire.FromWire(view.Statistics, out string? problem)
                ?? throw ClientWire.Malformed(target, $"{field}.statistics: {problem}");
            age = Wire.StatisticsWire.FromWire(view.StatisticsAge)
                ?? throw ClientWire.Malformed(target, $"{field}.statistics_age is missing or invalid");
        }

        return new ParticipantInspection(
            view.ObjectId,
            view.Removed,
            view.RemovedBecause,
            sinceHeard,
            view.Committed,
            view.Persisted,
            view.ReportedWorldLine,
            view.UncommittedCount,
            uncommitted,
            statistics,
            age);
    }
}
