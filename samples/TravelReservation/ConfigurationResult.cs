using Dse.Samples.Shared;

namespace Dse.Samples.TravelReservation;

/// <summary>What one configuration (one mode, trips of N services) measured.</summary>
public sealed class ConfigurationResult
{
    /// <summary>Whether the cluster ran speculatively.</summary>
    public required bool Speculative { get; init; }

    /// <summary>How many services each trip booked.</summary>
    public required int Services { get; init; }

    /// <summary>Every trip sent, in sending order.</summary>
    public required IReadOnlyList<TripResult> Trips { get; init; }

    /// <summary>Wall-clock time from the first trip sent to the last answer.</summary>
    public required TimeSpan Elapsed { get; init; }

    /// <summary>
    /// The latency (ms) of every confirmed trip: each made exactly <see cref="Services"/> reservations, so the rows compare
    /// like with like (a failed trip stops early and compensates what it had).
    /// </summary>
    public IReadOnlyList<double> LatenciesMs => Trips.Where(t => t.Outcome == TripRecord.Confirmed).Select(t => t.LatencyMs).ToArray();

    /// <summary>Mean latency (ms) of the confirmed trips; NaN without any.</summary>
    public double MeanMs => LatencyStats.Mean(LatenciesMs);

    /// <summary>95th percentile of the confirmed trips' latency (ms).</summary>
    public double P95Ms => LatencyStats.Percentile(LatenciesMs, 0.95);

    /// <summary>Trips answered confirmed.</summary>
    public int Confirmed => Trips.Count(t => t.Outcome == TripRecord.Confirmed);

    /// <summary>Trips answered failed (an item was full, and what they held was compensated).</summary>
    public int Failed => Trips.Count(t => t.Outcome?.StartsWith(TripRecord.FailedPrefix, StringComparison.Ordinal) == true);

    /// <summary>Trips that got no outcome: never answered within the retry window, or answered with an error.</summary>
    public int Unanswered => Trips.Count - Confirmed - Failed;
}
