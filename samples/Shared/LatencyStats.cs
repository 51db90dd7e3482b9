namespace Dse.Samples.Shared;

/// <summary>Mean and nearest-rank percentiles of latency samples.</summary>
internal static class LatencyStats
{
    /// <summary>The mean; NaN for no samples.</summary>
    public static double Mean(IReadOnlyList<double> samples)
    {
        ArgumentNullException.ThrowIfNull(samples);
        double sum = 0;
        foreach (double s in samples)
        {
            sum += s;
        }

        return samples.Count == 0 ? double.NaN : sum / samples.Count;
    }

    /// <summary>The nearest-rank percentile <paramref name="p"/> (0..1); NaN for no samples.</summary>
    public static double Percentile(IReadOnlyList<double> samples, double p)
    {
        ArgumentNullException.ThrowIfNull(samples);
        if (samples.Count == 0)
        {
            return double.NaN;
        }

        var sorted = samples.ToArray();
        Array.Sort(sorted);
        return sorted[Math.Clamp((int)Math.Ceiling(p * sorted.Length) - 1, 0, sorted.Length - 1)];
    }
}
