using Google.Protobuf.WellKnownTypes;

namespace Dse.Coordinator.Grpc;

/// <summary>
/// Maps <see cref="Dse.ParticipantStatistics"/> to its wire message and back, for the client and the server alike
/// (the file is compiled into both, each with its own internal copy of the wire types). Reading checks every rule of
/// the message's contract and reports the first broken one instead of throwing, so that each side can refuse in its
/// own terms.
/// </summary>
internal static class StatisticsWire
{
    public static ParticipantStatistics ToWire(Dse.ParticipantStatistics statistics)
    {
        var waits = new BarrierWaitDistribution { SumMs = statistics.BarrierWaits.SumMilliseconds };
        waits.UpperBoundsMs.AddRange(statistics.BarrierWaits.UpperBoundsMilliseconds);
        waits.Counts.AddRange(statistics.BarrierWaits.Counts);
        var wire = new ParticipantStatistics
        {
            CurrentVersion = statistics.CurrentVersion,
            WorldLine = statistics.WorldLine,
            BarrierWaits = waits,
        };
        foreach (var queue in statistics.Queues)
        {
            wire.Queues.Add(new QueueStatistics { Name = queue.Name, Unconsumed = queue.Unconsumed, InSpilled = queue.InSpilled, OutPending = queue.OutPending });
        }

        return wire;
    }

    /// <summary>The statistics <paramref name="wire"/> carries, or <c>null</c> and the first rule it breaks.</summary>
    public static Dse.ParticipantStatistics? FromWire(ParticipantStatistics wire, out string? problem)
    {
        if (wire.BarrierWaits is null)
        {
            problem = "barrier_waits is missing.";
            return null;
        }

        var queues = new Dse.QueueStatistics[wire.Queues.Count];
        for (int i = 0; i < queues.Length; i++)
        {
            var q = wire.Queues[i];
            queues[i] = new Dse.QueueStatistics(q.Name, q.Unconsumed, q.InSpilled, q.OutPending);
        }

        var statistics = new Dse.ParticipantStatistics(
            wire.CurrentVersion,
            wire.WorldLine,
            new Dse.BarrierWaitDistribution([.. wire.BarrierWaits.UpperBoundsMs], [.. wire.BarrierWaits.Counts], wire.BarrierWaits.SumMs),
            queues);
        problem = Dse.ParticipantStatistics.Problem(statistics);
        return problem is null ? statistics : null;
    }

    /// <summary>A non-negative duration; <c>null</c> for a missing, invalid or negative one.</summary>
    public static TimeSpan? FromWire(Duration? duration)
    {
        if (duration is null)
        {
            return null;
        }

        try
        {
            var span = duration.ToTimeSpan();
            return span >= TimeSpan.Zero ? span : null;
        }
        catch (InvalidOperationException)
        {
            return null;
        }
    }
}
