namespace Dse.Charts.Tests;

public sealed class LatencyDistributionTests
{
    private static readonly LatencyDistribution Ten = new([10, 1, 9, 2, 8, 3, 7, 4, 6, 5]);

    [Theory]
    [InlineData(0, 1)]
    [InlineData(50, 5)]
    [InlineData(99, 10)]
    [InlineData(100, 10)]
    public void Percentile_NearestRank_ReturnsSample(double p, double expected) =>
        Assert.Equal(expected, Ten.Percentile(p));

    [Fact]
    public void Mean_UnsortedSamples_IsArithmeticMean() => Assert.Equal(5.5, Ten.Mean, 9);

    [Fact]
    public void Fractions_BinsFromZero_CountsOnlyVisibleRange()
    {
        // Bins [0,4) [4,8): 1,2,3 | 4,5,6,7; 8,9,10 fall past the last edge.
        var fractions = Ten.Fractions(width: 4, bins: 2);

        Assert.Equal([0.3, 0.4], fractions);
    }

    [Theory]
    [InlineData(7, 3)]
    [InlineData(7.5, 3)]
    [InlineData(10, 0)]
    [InlineData(0, 10)]
    public void CountAbove_Limit_CountsStrictlyGreater(double limit, int expected) =>
        Assert.Equal(expected, Ten.CountAbove(limit));

    [Fact]
    public void Cdf_FewerPointsThanSamples_EndsAtMaxWithFractionOne()
    {
        var (xs, ys) = Ten.Cdf(points: 5);

        Assert.Equal(6, xs.Length);
        Assert.Equal(10, xs[^1]);
        Assert.Equal(1.0, ys[^1]);
        Assert.Equal(0.2, ys[1], 9);
    }

    [Theory]
    [InlineData(40, 0.2)]
    [InlineData(10, 0.05)]
    [InlineData(100, 0.5)]
    [InlineData(1000, 5)]
    public void BinWidth_Range_IsNiceWidthForAtMost200Bins(double xMax, double expected) =>
        Assert.Equal(expected, CommitLatencyChart.BinWidth(xMax), 9);
}
