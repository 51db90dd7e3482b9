using System.Globalization;
using ScottPlot;

namespace Dse.Charts;

/// <summary>
/// The 2PC scenario (<c>2pc.json</c>): the distribution of per-transaction commit latency, speculative vs
/// non-speculative, as in the libDSE paper's Fig. 11, with the group-commit period's multiples marked.
/// </summary>
internal static class CommitLatencyChart
{
    /// <summary>The results file this chart reads.</summary>
    public const string InputFile = "2pc.json";

    /// <summary>The histogram (or, without samples, the summary bars).</summary>
    public const string HistogramFile = "2pc-commit-latency.png";

    /// <summary>The empirical CDF, drawn only from samples.</summary>
    public const string CdfFile = "2pc-commit-latency-cdf.png";

    private const string Title = "2PC commit latency: speculative vs non-speculative";

    // Bars across the visible range; enough to show the group-commit steps, few enough to read.
    private const int TargetBins = 200;

    // The visible range ends at this percentile so one outlier cannot squash the distribution.
    private const double RangePercentile = 99.5;

    private static readonly double[] NiceSteps = [1, 2, 2.5, 5];

    /// <summary>Renders the chart files from <paramref name="report"/>; returns their paths.</summary>
    /// <exception cref="ChartInputException">A field the chart needs is missing or malformed.</exception>
    public static IReadOnlyList<string> Render(BenchmarkReport report, string outDir, TextWriter log)
    {
        var groupCommitMs = report.ResultOr("group_commit_ms", 0);
        if (groupCommitMs < 0)
        {
            throw new ChartInputException(report.File, "results.group_commit_ms", "must not be negative");
        }

        var series = new List<Series>(2);
        var missing = new List<string>(2);
        AddSeries(report, series, missing, "spec_commit_ms", "speculative", ChartStyle.Speculative);
        AddSeries(report, series, missing, "nonspec_commit_ms", "non-speculative", ChartStyle.NonSpeculative);
        if (series.Count == 0)
        {
            log.WriteLine($"{report.File}: no per-transaction samples ({string.Join(", ", missing)}); drawing the summary percentiles only.");
            return [RenderSummary(report, outDir, groupCommitMs)];
        }

        if (missing.Count > 0)
        {
            log.WriteLine($"{report.File}: {missing[0]}; drawing the other mode only.");
        }

        var xMax = VisibleRange(series, groupCommitMs);
        return [RenderHistogram(report, outDir, series, groupCommitMs, xMax), RenderCdf(report, outDir, series, groupCommitMs, xMax)];
    }

    /// <summary>The upper end of the x axis: the 99.5th percentile, rounded up to a group-commit multiple.</summary>
    internal static double VisibleRange(IReadOnlyList<Series> series, double groupCommitMs)
    {
        var xMax = 0.0;
        foreach (var s in series)
        {
            xMax = Math.Max(xMax, s.Distribution.Percentile(RangePercentile));
        }

        if (groupCommitMs > 0)
        {
            xMax = Math.Max(groupCommitMs, Math.Ceiling(xMax / groupCommitMs) * groupCommitMs);
        }

        return xMax > 0 ? xMax : 1;
    }

    /// <summary>The smallest 1/2/2.5/5 x 10^k bin width that gives at most <see cref="TargetBins"/> bins.</summary>
    internal static double BinWidth(double xMax)
    {
        var wanted = xMax / TargetBins;
        var decade = Math.Pow(10, Math.Floor(Math.Log10(wanted)));
        foreach (var step in NiceSteps)
        {
            if (step * decade >= wanted)
            {
                return step * decade;
            }
        }

        return 10 * decade;
    }

    private static void AddSeries(
        BenchmarkReport report, List<Series> series, List<string> missing, string key, string name, Color color)
    {
        var samples = report.Samples(key);
        if (samples is null || samples.Length == 0)
        {
            missing.Add($"samples.{key} is {(samples is null ? "absent" : "empty")}");
            return;
        }

        series.Add(new Series(name, color, new LatencyDistribution(samples)));
    }

    private static string RenderHistogram(
        BenchmarkReport report, string outDir, IReadOnlyList<Series> series, double groupCommitMs, double xMax)
    {
        var width = BinWidth(xMax);
        var bins = (int)Math.Ceiling(xMax / width - 1e-9);
        var plot = ChartStyle.Create(Title, report);
        var yMax = 0.0;
        foreach (var s in series)
        {
            var fractions = s.Distribution.Fractions(width, bins);
            var bars = new List<Bar>(bins);
            for (var i = 0; i < bins; i++)
            {
                yMax = Math.Max(yMax, fractions[i]);
                if (fractions[i] > 0)
                {
                    bars.Add(new Bar
                    {
                        Position = (i + 0.5) * width,
                        Value = fractions[i],
                        Size = width,
                        FillColor = s.Color.WithAlpha(0.55),
                        LineWidth = 0,
                    });
                }
            }

            var barPlot = plot.Add.Bars(bars);
            barPlot.LegendText = s.Legend();
            var mean = plot.Add.VerticalLine(s.Distribution.Mean, 2, s.Color, LinePattern.Dashed);
            mean.ExcludeFromLegend = true;
        }

        AddGroupCommitLines(plot, groupCommitMs, xMax);
        plot.XLabel($"commit latency (ms), bins of {Ms(width)} ms{HiddenTail(series, xMax)}");
        plot.YLabel("fraction of transactions");
        plot.Axes.SetLimits(0, xMax, 0, yMax * 1.08);
        plot.ShowLegend(Alignment.UpperRight);
        return ChartStyle.Save(plot, outDir, HistogramFile);
    }

    private static string RenderCdf(
        BenchmarkReport report, string outDir, IReadOnlyList<Series> series, double groupCommitMs, double xMax)
    {
        var plot = ChartStyle.Create($"{Title} (CDF)", report);
        foreach (var s in series)
        {
            var (xs, ys) = s.Distribution.Cdf(4000);
            var line = plot.Add.Scatter(xs, ys, s.Color);
            line.ConnectStyle = ConnectStyle.StepHorizontal;
            line.MarkerSize = 0;
            line.LineWidth = 2;
            line.LegendText = s.Legend();
        }

        foreach (var fraction in (ReadOnlySpan<double>)[0.5, 0.99])
        {
            var line = plot.Add.HorizontalLine(fraction, 1, ChartStyle.Reference.WithAlpha(0.6), LinePattern.Dotted);
            line.ExcludeFromLegend = true;
        }

        AddGroupCommitLines(plot, groupCommitMs, xMax);
        plot.XLabel($"commit latency (ms){HiddenTail(series, xMax)}");
        plot.YLabel("fraction of transactions committed within x (dotted: 0.5, 0.99)");
        plot.Axes.SetLimits(0, xMax, 0, 1.02);
        plot.ShowLegend(Alignment.LowerRight);
        return ChartStyle.Save(plot, outDir, CdfFile);
    }

    // Without samples: p50, mean and p99 per mode from results.
    private static string RenderSummary(BenchmarkReport report, string outDir, double groupCommitMs)
    {
        string[] stats = ["p50", "mean", "p99"];
        var plot = ChartStyle.Create($"{Title} (summary: the run wrote no per-transaction samples)", report);
        var yMax = 0.0;
        foreach (var (prefix, name, color, offset) in (ReadOnlySpan<(string, string, Color, double)>)
                 [("spec", "speculative", ChartStyle.Speculative, -0.2), ("nonspec", "non-speculative", ChartStyle.NonSpeculative, 0.2)])
        {
            var bars = new List<Bar>(stats.Length);
            for (var i = 0; i < stats.Length; i++)
            {
                var value = report.Result($"{prefix}_{stats[i]}_ms");
                yMax = Math.Max(yMax, value);
                bars.Add(new Bar
                {
                    Position = i + offset,
                    Value = value,
                    Size = 0.38,
                    FillColor = color,
                    LineWidth = 0,
                    Label = $"{Ms(value)} ms",
                });
            }

            var barPlot = plot.Add.Bars(bars);
            barPlot.LegendText = name;
        }

        if (groupCommitMs > 0)
        {
            for (var k = 1; k * groupCommitMs <= yMax * 1.15; k++)
            {
                var line = plot.Add.HorizontalLine(k * groupCommitMs, 1, ChartStyle.Reference.WithAlpha(0.5), LinePattern.Dotted);
                line.LegendText = k == 1 ? $"group commit every {Ms(groupCommitMs)} ms" : string.Empty;
                line.ExcludeFromLegend = k > 1;
            }
        }

        plot.Axes.Bottom.SetTicks([0, 1, 2], stats);
        plot.YLabel("commit latency (ms)");
        plot.Axes.SetLimits(-0.6, 2.6, 0, Math.Max(yMax, groupCommitMs) * 1.15);
        plot.ShowLegend(Alignment.UpperLeft);
        return ChartStyle.Save(plot, outDir, HistogramFile);
    }

    private static void AddGroupCommitLines(Plot plot, double groupCommitMs, double xMax)
    {
        if (groupCommitMs <= 0)
        {
            return;
        }

        for (var k = 1; k * groupCommitMs <= xMax + 1e-9; k++)
        {
            var line = plot.Add.VerticalLine(k * groupCommitMs, 1, ChartStyle.Reference.WithAlpha(0.5), LinePattern.Dotted);
            line.LegendText = k == 1 ? $"group commit every {Ms(groupCommitMs)} ms" : string.Empty;
            line.ExcludeFromLegend = k > 1;
        }
    }

    private static string HiddenTail(IReadOnlyList<Series> series, double xMax)
    {
        var hidden = 0;
        var total = 0;
        var max = 0.0;
        foreach (var s in series)
        {
            hidden += s.Distribution.CountAbove(xMax);
            total += s.Distribution.Count;
            max = Math.Max(max, s.Distribution.Max);
        }

        return hidden == 0
            ? string.Empty
            : string.Create(CultureInfo.InvariantCulture, $"; {hidden} of {total:N0} samples above {Ms(xMax)} ms not shown (max {Ms(max)} ms)");
    }

    private static string Ms(double value) =>
        value.ToString(Math.Abs(value) >= 100 ? "0" : Math.Abs(value) >= 10 ? "0.#" : "0.##", CultureInfo.InvariantCulture);

    /// <summary>One mode's samples with how it is drawn.</summary>
    internal sealed record Series(string Name, Color Color, LatencyDistribution Distribution)
    {
        /// <summary>Legend text: name, mean, p99 and sample count.</summary>
        public string Legend() => string.Create(
            CultureInfo.InvariantCulture,
            $"{Name}: mean {Ms(Distribution.Mean)} ms, p99 {Ms(Distribution.Percentile(99))} ms (n = {Distribution.Count:N0})");
    }
}
