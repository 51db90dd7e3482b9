using System.Globalization;

namespace Dse;

/// <summary>
/// How long a participant's barriers waited (<see cref="Sthread.BarrierAsync(CancellationToken)"/>,
/// <see cref="StateObject.WaitForCommitAsync"/>) since it started: a histogram with cumulative counts.
/// </summary>
/// <param name="UpperBoundsMilliseconds">
/// The buckets' upper bounds in milliseconds: finite, positive, strictly ascending, at most <see cref="MaxBuckets"/>.
/// </param>
/// <param name="Counts">
/// Waits per bucket, one more entry than <paramref name="UpperBoundsMilliseconds"/>: entry <c>i</c> counts waits longer
/// than bound <c>i - 1</c> and at most bound <c>i</c>; the last counts waits longer than the last bound. Non-negative.
/// </param>
/// <param name="SumMilliseconds">The sum of all waits; finite and non-negative.</param>
public sealed record BarrierWaitDistribution(
    IReadOnlyList<double> UpperBoundsMilliseconds,
    IReadOnlyList<long> Counts,
    double SumMilliseconds)
{
    /// <summary>The most bucket bounds a distribution may have.</summary>
    public const int MaxBuckets = 32;

    /// <summary>The number of waits counted.</summary>
    public long Total
    {
        get
        {
            long total = 0;
            foreach (long count in Counts)
            {
                total += count;
            }

            return total;
        }
    }

    /// <summary>
    /// The upper bound of the bucket holding the <paramref name="quantile"/> (0 to 1) of the waits: an estimate from
    /// above; <see cref="double.PositiveInfinity"/> when it lies beyond the last bound, <c>null</c> when nothing waited.
    /// </summary>
    public double? QuantileUpperBound(double quantile)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(quantile, 0);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(quantile, 1);
        long total = Total;
        if (total == 0)
        {
            return null;
        }

        long rank = Math.Max(1, (long)Math.Ceiling(quantile * total));
        long seen = 0;
        for (int i = 0; i < Counts.Count; i++)
        {
            seen += Counts[i];
            if (seen >= rank)
            {
                return i < UpperBoundsMilliseconds.Count ? UpperBoundsMilliseconds[i] : double.PositiveInfinity;
            }
        }

        return double.PositiveInfinity;
    }

    /// <summary>Why <paramref name="distribution"/> breaks the rules its parameters state, or <c>null</c>.</summary>
    internal static string? Problem(BarrierWaitDistribution distribution)
    {
        var bounds = distribution.UpperBoundsMilliseconds;
        var counts = distribution.Counts;
        if (bounds is null || counts is null)
        {
            return "upper_bounds_ms and counts are required.";
        }

        if (bounds.Count > MaxBuckets)
        {
            return $"{bounds.Count} bucket bounds; at most {MaxBuckets} are accepted.";
        }

        if (counts.Count != bounds.Count + 1)
        {
            return $"{counts.Count} counts for {bounds.Count} bounds; there is one count more than bounds.";
        }

        for (int i = 0; i < bounds.Count; i++)
        {
            if (!double.IsFinite(bounds[i]) || bounds[i] <= 0 || (i > 0 && bounds[i] <= bounds[i - 1]))
            {
                return $"upper_bounds_ms[{i}] is {bounds[i].ToString(CultureInfo.InvariantCulture)}; bounds are finite, positive and strictly ascending.";
            }
        }

        long total = 0;
        for (int i = 0; i < counts.Count; i++)
        {
            if (counts[i] < 0)
            {
                return $"counts[{i}] is {counts[i]}; counts are non-negative.";
            }

            if (long.MaxValue - total < counts[i])
            {
                return "the counts add up to more than a 64-bit count holds.";
            }

            total += counts[i];
        }

        if (!double.IsFinite(distribution.SumMilliseconds) || distribution.SumMilliseconds < 0)
        {
            return $"sum_ms is {distribution.SumMilliseconds.ToString(CultureInfo.InvariantCulture)}; it is finite and non-negative.";
        }

        return null;
    }
}
