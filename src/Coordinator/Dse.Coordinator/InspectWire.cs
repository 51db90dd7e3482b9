using Google.Protobuf.WellKnownTypes;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator;

/// <summary>Maps a <see cref="ClusterInspection"/> to the Inspect RPC's answer.</summary>
internal static class InspectWire
{
    /// <summary>The most uncommitted versions per participant one Inspect call copies.</summary>
    public const int MaxVersionsPerParticipant = 1024;

    public static Wire.InspectResponse ToWire(ClusterInspection inspection)
    {
        var wire = new Wire.InspectResponse
        {
            Incarnation = inspection.Incarnation,
            Epoch = inspection.Epoch,
            WorldLine = inspection.WorldLine,
            IsRecovering = inspection.IsRecovering,
            Fault = inspection.Fault ?? string.Empty,
        };
        foreach (var participant in inspection.Participants)
        {
            wire.Participants.Add(ToWire(participant));
        }

        foreach (var decision in inspection.Decisions)
        {
            var view = new Wire.DecisionView { Decision = ServerWire.ToWire(decision.Decision), ReportedBeforeKnown = decision.ReportedBefore is not null };
            if (decision.ReportedBefore is { } before)
            {
                ServerWire.AddEntries(view.ReportedBefore, before);
            }

            wire.Decisions.Add(view);
        }

        return wire;
    }

    private static Wire.ParticipantView ToWire(ParticipantInspection participant)
    {
        var view = new Wire.ParticipantView
        {
            ObjectId = participant.ObjectId,
            Removed = participant.Removed,
            RemovedBecause = participant.RemovedBecause,
            SinceHeard = Duration.FromTimeSpan(NonNegative(participant.SinceHeard)),
            Committed = participant.Committed,
            Persisted = participant.Persisted,
            ReportedWorldLine = participant.ReportedWorldLine,
            UncommittedCount = participant.UncommittedCount,
        };
        foreach (var report in participant.Uncommitted)
        {
            var r = new Wire.VersionReport { Version = report.Version, WorldLine = report.WorldLine };
            foreach (var d in report.Dependencies)
            {
                r.Dependencies.Add(new Wire.ObjectVersion { ObjectId = d.ObjectId, Version = d.Version });
            }

            view.Uncommitted.Add(r);
        }

        if (participant.Statistics is { } statistics)
        {
            view.Statistics = Wire.StatisticsWire.ToWire(statistics);
            view.StatisticsAge = Duration.FromTimeSpan(NonNegative(participant.StatisticsAge ?? TimeSpan.Zero));
        }

        return view;
    }

    private static TimeSpan NonNegative(TimeSpan span) => span < TimeSpan.Zero ? TimeSpan.Zero : span;
}
