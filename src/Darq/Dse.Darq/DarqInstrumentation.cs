using System.Diagnostics.Metrics;
using System.Runtime.CompilerServices;

namespace Dse.Darq;

/// <summary>The DARQ meter and its instruments; every name is defined here.</summary>
public static class DarqInstrumentation
{
    /// <summary>The name of the DARQ <see cref="System.Diagnostics.Metrics.Meter"/>.</summary>
    public const string MeterName = "Dse.Darq";

    internal static readonly Meter Meter = new(MeterName);

    // The open DARQs the depth gauges read; weak, so a DARQ that was never disposed is not kept alive by them.
    private static readonly ConditionalWeakTable<Darq, object?> Open = [];

    /// <summary>Unconsumed IN and SELF messages of each open DARQ (tag <c>darq</c>).</summary>
    internal static readonly ObservableGauge<long> Unconsumed = Meter.CreateObservableGauge(
        "dse.darq.unconsumed", () => Observe(static d => d.UnconsumedCount), "{message}", "IN and SELF messages not yet consumed, per open DARQ.");

    /// <summary>Unconsumed IN messages held in the log only, not in memory (tag <c>darq</c>).</summary>
    internal static readonly ObservableGauge<long> InSpilled = Meter.CreateObservableGauge(
        "dse.darq.in.spilled", () => Observe(static d => d.SpilledInCount), "{message}",
        "Unconsumed IN messages waiting in the log only (beyond the in-memory budget), per open DARQ.");

    /// <summary>OUT messages not yet acknowledged by their destinations (tag <c>darq</c>).</summary>
    internal static readonly ObservableGauge<long> OutPending = Meter.CreateObservableGauge(
        "dse.darq.out.pending", () => Observe(static d => d.PendingOutCount), "{message}", "OUT messages not yet acknowledged by their destinations, per open DARQ.");

    /// <summary>IN messages appended (tag <c>darq</c>).</summary>
    internal static readonly Counter<long> Enqueues = Meter.CreateCounter<long>("dse.darq.enqueues", "{message}", "IN messages appended to the log.");

    /// <summary>Enqueues acknowledged as duplicates.</summary>
    internal static readonly Counter<long> Duplicates = Meter.CreateCounter<long>("dse.darq.enqueue.duplicates", "{message}", "Enqueues recognized as duplicates and not appended.");

    internal static readonly Counter<long> ProducersRetired = Meter.CreateCounter<long>("dse.darq.producers.retired", "{producer}",
        "Producers removed from the deduplication table (Darq.RetireProducerAsync).");

    internal static readonly Counter<long> SequenceGaps = Meter.CreateCounter<long>("dse.darq.enqueue.sequence_gaps", "{message}",
        "Enqueues refused because they skipped sequence numbers of their producer (DarqOptions.ContiguousProducerSequences).");

    /// <summary>Steps appended.</summary>
    internal static readonly Counter<long> Steps = Meter.CreateCounter<long>("dse.darq.steps", "{step}", "Steps validated and appended.");

    /// <summary>Steps refused.</summary>
    internal static readonly Counter<long> StepsRejected = Meter.CreateCounter<long>("dse.darq.steps.rejected", "{step}", "Steps refused by validation or for a stale incarnation.");

    /// <summary>Time from requesting a commit to its completion.</summary>
    internal static readonly Histogram<double> CommitLatency = Meter.CreateHistogram<double>("dse.darq.commit.duration", "ms", "Time from requesting a log commit to its durability.");

    /// <summary>Messages replayed to a newly registered processor.</summary>
    internal static readonly Histogram<long> ReplaySize = Meter.CreateHistogram<long>("dse.darq.replay.size", "{message}", "Messages replayed to a processor at registration.");

    /// <summary>OUT messages acknowledged by their destinations.</summary>
    internal static readonly Counter<long> Deliveries = Meter.CreateCounter<long>("dse.darq.deliveries", "{message}", "OUT messages acknowledged by their destinations.");

    /// <summary>Delivery attempts that failed or found no destination (retried).</summary>
    internal static readonly Counter<long> DeliveryFailures = Meter.CreateCounter<long>("dse.darq.delivery.failures", "{attempt}", "OUT delivery attempts that failed or found no destination.");

    /// <summary>Delivery lanes delivering now (one per destination, at most <see cref="DarqOptions.MaxConcurrentDeliveries"/> per DARQ).</summary>
    internal static readonly UpDownCounter<long> DeliveryLanesActive = Meter.CreateUpDownCounter<long>("dse.darq.delivery.lanes", "{lane}",
        "Destinations being delivered to at this moment (delivery lanes with a turn under way).");

    /// <summary>Deliveries refused for good that parked their destination.</summary>
    internal static readonly Counter<long> DeliveriesParked = Meter.CreateCounter<long>("dse.darq.deliveries.parked", "{attempt}", "OUT deliveries refused for good, which parked their destination.");

    /// <summary>OUT messages given up on request.</summary>
    internal static readonly Counter<long> OutDiscarded = Meter.CreateCounter<long>("dse.darq.out.discarded", "{message}", "Pending OUT messages discarded on request (no longer sent).");

    /// <summary>Checkpoints appended.</summary>
    internal static readonly Counter<long> Checkpoints = Meter.CreateCounter<long>("dse.darq.checkpoints", "{checkpoint}", "Checkpoints validated and appended.");

    /// <summary>SELF messages replaced by checkpoints.</summary>
    internal static readonly Counter<long> CheckpointReplaced = Meter.CreateCounter<long>("dse.darq.checkpoint.replaced", "{message}", "SELF messages replaced by checkpoints.");

    /// <summary>Checkpoints refused.</summary>
    internal static readonly Counter<long> CheckpointsRejected = Meter.CreateCounter<long>("dse.darq.checkpoints.rejected", "{checkpoint}", "Checkpoints refused by validation or for a stale incarnation.");

    /// <summary>Activity handler invocations (first runs and retries).</summary>
    internal static readonly Counter<long> ActivityAttempts = Meter.CreateCounter<long>("dse.darq.activity.attempts", "{attempt}", "Activity handler invocations, retries included.");

    /// <summary>Activity handler invocations that failed (and are retried).</summary>
    internal static readonly Counter<long> ActivityFailures = Meter.CreateCounter<long>("dse.darq.activity.failures", "{attempt}", "Activity handler invocations that failed and are retried.");

    /// <summary>Activities completed by a step.</summary>
    internal static readonly Counter<long> ActivityCompletions = Meter.CreateCounter<long>("dse.darq.activity.completions", "{activity}", "Activities completed by a step that consumed them.");

    /// <summary>General speculation: restores that voided part of the log.</summary>
    internal static readonly Counter<long> Rollbacks = Meter.CreateCounter<long>("dse.darq.rollbacks", "{rollback}", "Restores that voided the log after a version (general speculation).");

    /// <summary>General speculation: actions that waited because the coordinator's commits lagged (backpressure).</summary>
    internal static readonly Counter<long> HeldActions = Meter.CreateCounter<long>("dse.darq.speculation.held", "{action}",
        "Actions that waited for the coordinator to commit before starting (general speculation backpressure).");

    /// <summary>General speculation: how long each held action waited.</summary>
    internal static readonly Histogram<double> HoldDuration = Meter.CreateHistogram<double>("dse.darq.speculation.hold.duration", "ms",
        "Time an action waited for the coordinator to commit before starting (general speculation backpressure).");

    /// <summary>Spilled IN messages read back from the log for the processor.</summary>
    internal static readonly Counter<long> FedFromLog = Meter.CreateCounter<long>("dse.darq.in.fed_from_log", "{message}",
        "Spilled IN messages read back from the log and handed to the processor (the backlog beyond DarqOptions.MaxBufferedInBytes).");

    /// <summary>Spilled OUT payloads read back from the log for the delivery loop.</summary>
    internal static readonly Counter<long> OutReadFromLog = Meter.CreateCounter<long>("dse.darq.out.read_from_log", "{message}",
        "Spilled OUT payloads read back from the log to be sent (pending OUT messages beyond DarqOptions.MaxBufferedOutBytes).");

    /// <summary>General speculation: scans for an earlier pending OUT message to a destination (after a restore, before a send).</summary>
    internal static readonly Counter<long> DeliveryOrderScans = Meter.CreateCounter<long>("dse.darq.delivery.order_scans", "{scan}",
        "Sends that checked for an earlier pending OUT message to the same destination, because a restore rebuilt the pending messages since the turn began (general speculation).");

    /// <summary>General speculation: messages and acknowledgements refused as coming from a rolled-back world-line.</summary>
    internal static readonly Counter<long> MessagesRefused = Meter.CreateCounter<long>("dse.darq.messages.refused", "{message}", "Messages or acknowledgements refused for a lower world-line (general speculation).");

    /// <summary>Counts <paramref name="darq"/> in the depth gauges from now on (it opened).</summary>
    internal static void Track(Darq darq) => Open.AddOrUpdate(darq, null);

    /// <summary>Stops counting <paramref name="darq"/> (it is closing).</summary>
    internal static void Untrack(Darq darq) => Open.Remove(darq);

    private static List<Measurement<long>> Observe(Func<Darq, int> depth)
    {
        var measurements = new List<Measurement<long>>();
        foreach (var (darq, _) in Open)
        {
            measurements.Add(new Measurement<long>(depth(darq), new KeyValuePair<string, object?>("darq", darq.Name)));
        }

        return measurements;
    }
}
