namespace Dse.Benchmarks.Scenarios.Functions;

/// <summary>
/// Draws integers in [0, n) with a Zipfian distribution of skew <c>theta</c> (0 = uniform), by the method of Gray et
/// al. ("Quickly generating billion-record synthetic databases") that YCSB uses: rank 0 is the most popular.
/// </summary>
public sealed class Zipfian
{
    private readonly int _n;
    private readonly double _theta;
    private readonly double _alpha;
    private readonly double _zetan;
    private readonly double _eta;
    private readonly Random _random;

    /// <summary>Creates a generator over <paramref name="n"/> items with skew <paramref name="theta"/> (0 &lt;= theta &lt; 1).</summary>
    /// <param name="n">The number of items.</param>
    /// <param name="theta">The skew: 0 uniform, 0.99 YCSB's default, 0.999 a very hot head.</param>
    /// <param name="random">The source of randomness (seeded for a reproducible workload).</param>
    public Zipfian(int n, double theta, Random random)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(n, 1);
        ArgumentOutOfRangeException.ThrowIfNegative(theta);
        ArgumentOutOfRangeException.ThrowIfGreaterThanOrEqual(theta, 1.0);
        ArgumentNullException.ThrowIfNull(random);
        _n = n;
        _theta = theta;
        _random = random;
        if (theta == 0)
        {
            return;
        }

        double zeta2 = Zeta(2, theta);
        _zetan = Zeta(n, theta);
        _alpha = 1.0 / (1.0 - theta);
        _eta = (1 - Math.Pow(2.0 / n, 1 - theta)) / (1 - (zeta2 / _zetan));
    }

    /// <summary>The next item.</summary>
    /// <returns>An integer in [0, n).</returns>
    public int Next()
    {
        if (_theta == 0)
        {
            return _random.Next(_n);
        }

        double u = _random.NextDouble();
        double uz = u * _zetan;
        if (uz < 1.0)
        {
            return 0;
        }

        if (uz < 1.0 + Math.Pow(0.5, _theta))
        {
            return Math.Min(1, _n - 1);
        }

        return Math.Min(_n - 1, (int)(_n * Math.Pow((_eta * u) - _eta + 1, _alpha)));
    }

    private static double Zeta(int n, double theta)
    {
        double sum = 0;
        for (int i = 1; i <= n; i++)
        {
            sum += 1.0 / Math.Pow(i, theta);
        }

        return sum;
    }
}
