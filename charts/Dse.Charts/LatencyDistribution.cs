namespace Dse.Charts;

/// <summary>Summary and binned shape of one series of per-transaction latencies (ms), sorted once.</summary>
internal sealed class LatencyDistribution
{
    private readonly double[] _sorted;

    public LatencyDistribution(IReadOnlyCollection<double> samples)
    {
        ArgumentOutOfRangeException.ThrowIfZero(samples.Count, nameof(samples));
        _sorted = [.. samples];
        Array.Sort(_sorted);
        var sum = 0.0;
        foreach (var value in _sorted)
        {
            sum += value;
        }

        Mean = sum / _sorted.Length;
    }

    /// <summary>How many samples.</summary>
    public int Count => _sorted.Length;

    /// <summary>Arithmetic mean.</summary>
    public double Mean { get; }

    /// <summary>Largest sample.</summary>
    public double Max => _sorted[^1];

    /// <summary>The nearest-rank percentile, <paramref name="p"/> in [0, 100].</summary>
    public double Percentile(double p)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(p);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(p, 100);
        var rank = (int)Math.Ceiling(p / 100 * _sorted.Length);
        return _sorted[Math.Clamp(rank - 1, 0, _sorted.Length - 1)];
    }

    /// <summary>How many samples are strictly above <paramref name="limit"/>.</summary>
    public int CountAbove(double limit)
    {
        var index = Array.BinarySearch(_sorted, limit);
        if (index < 0)
        {
            return _sorted.Length - ~index;
        }

        // Step past every sample equal to the limit.
        while (index < _sorted.Length && _sorted[index] <= limit)
        {
            index++;
        }

        return _sorted.Length - index;
    }

    /// <summary>
    /// Fraction of all samples in each bin [i*width, (i+1)*width) for <paramref name="bins"/> bins starting at 0;
    /// samples at or past the last edge are counted in no bin (the fractions then sum below 1).
    /// </summary>
    public double[] Fractions(double width, int bins)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(width);
        var fractions = new double[bins];
        foreach (var value in _sorted)
        {
            var bin = (int)Math.Floor(value / width);
            if (bin >= bins)
            {
                break;
            }

            fractions[Math.Max(bin, 0)] += 1;
        }

        for (var i = 0; i < bins; i++)
        {
            fractions[i] /= _sorted.Length;
        }

        return fractions;
    }

    /// <summary>
    /// At most <paramref name="points"/> (x, F(x)) points of the empirical CDF, evenly spaced in rank, ending at the maximum.
    /// </summary>
    public (double[] Xs, double[] Ys) Cdf(int points)
    {
        var m = Math.Min(points, _sorted.Length);
        var xs = new double[m + 1];
        var ys = new double[m + 1];
        xs[0] = Math.Min(0, _sorted[0]);
        for (var i = 1; i <= m; i++)
        {
            var index = (int)((long)i * _sorted.Length / m) - 1;
            xs[i] = _sorted[index];
            ys[i] = (index + 1.0) / _sorted.Length;
        }

        return (xs, ys);
    }
}
