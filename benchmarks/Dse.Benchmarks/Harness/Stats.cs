namespace Dse.Benchmarks.Harness;

/// <summary>Small statistics over repeated measurements.</summary>
public static class Stats
{
    /// <summary>The sample at quantile <paramref name="q"/> of <paramref name="sorted"/> (ascending); 0 for no samples.</summary>
    public static double Percentile(IReadOnlyList<double> sorted, double q) =>
        sorted.Count == 0 ? 0 : sorted[Math.Min(sorted.Count - 1, (int)(q * sorted.Count))];

    /// <summary>The median (the mean of the middle two for an even count).</summary>
    /// <exception cref="ArgumentException">No samples.</exception>
    public static double Median(IReadOnlyList<double> samples)
    {
        ArgumentNullException.ThrowIfNull(samples);
        if (samples.Count == 0)
        {
            throw new ArgumentException("The median of no samples is undefined.", nameof(samples));
        }

        var sorted = new double[samples.Count];
        for (int i = 0; i < sorted.Length; i++)
        {
            sorted[i] = samples[i];
        }

        Array.Sort(sorted);
        int mid = sorted.Length / 2;
        return sorted.Length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    }
}
