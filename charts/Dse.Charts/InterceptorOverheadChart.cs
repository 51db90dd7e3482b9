using System.Globalization;
using ScottPlot;

namespace Dse.Charts;

/// <summary>
/// The interceptor scenario (<c>interceptor.json</c>): maximum throughput without DSE, with DSE wired by hand (the
/// caller's header in the request message and, when the file has it, in call metadata), and with DSE through the gRPC
/// interceptor, against the targets relative to no-DSE.
/// </summary>
internal static class InterceptorOverheadChart
{
    /// <summary>The results file this chart reads.</summary>
    public const string InputFile = "interceptor.json";

    /// <summary>The chart file.</summary>
    public const string OutputFile = "interceptor-overhead.png";

    /// <summary>DSE wired by hand keeps at least this fraction of no-DSE throughput.</summary>
    public const double ManualTarget = 0.95;

    /// <summary>DSE through the interceptor keeps at least this fraction of no-DSE throughput.</summary>
    public const double InterceptorTarget = 0.85;

    /// <summary>Renders the chart from <paramref name="report"/>; returns its path.</summary>
    /// <exception cref="ChartInputException">A field the chart needs is missing or malformed.</exception>
    public static string Render(BenchmarkReport report, string outDir)
    {
        var noDse = report.Result("nodse_ops");
        if (noDse <= 0)
        {
            throw new ChartInputException(report.File, "results.nodse_ops", "must be positive");
        }

        var manual = report.Result("manual_ops");
        var interceptor = report.Result("interceptor_ops");
        var manualRatio = report.Result("manual_ratio");
        var interceptorRatio = report.Result("interceptor_ratio");

        // The manual server with the header in metadata: no target of its own; it shows what metadata costs.
        double? manualMetadata = report.ResultOr("manual_metadata_ops", double.NaN) is var m && !double.IsNaN(m) ? m : null;
        var plot = ChartStyle.Create("Max throughput: no DSE vs DSE (manual) vs DSE (interceptor)", report);
        var bars = new List<Bar>
        {
            Bar(0, noDse, ChartStyle.Baseline, $"{Ops(noDse)} ops/s\n1.00x (baseline)"),
            Bar(1, manual, manualRatio >= ManualTarget ? ChartStyle.Pass : ChartStyle.Fail,
                $"{Ops(manual)} ops/s\n{Ratio(manualRatio)}\n(target >= {Ratio(ManualTarget)})"),
        };
        var ticks = new List<string> { "no DSE", "DSE, manual" };
        if (manualMetadata is { } metadataOps)
        {
            bars.Add(Bar(bars.Count, metadataOps, ChartStyle.Reference, $"{Ops(metadataOps)} ops/s\n{Ratio(metadataOps / noDse)}"));
            ticks.Add("DSE, manual,\nheader in metadata");
        }

        bars.Add(Bar(bars.Count, interceptor, interceptorRatio >= InterceptorTarget ? ChartStyle.Pass : ChartStyle.Fail,
            $"{Ops(interceptor)} ops/s\n{Ratio(interceptorRatio)}\n(target >= {Ratio(InterceptorTarget)})"));
        ticks.Add("DSE, interceptor");
        var barPlot = plot.Add.Bars(bars);
        // Labels inside the bars, so they never collide with the target lines above them.
        barPlot.ValueLabelStyle.FontSize = 16;
        barPlot.ValueLabelStyle.Bold = true;
        barPlot.ValueLabelStyle.ForeColor = Colors.White;

        AddTarget(plot, noDse * ManualTarget, $"manual target: {Ratio(ManualTarget)} no-DSE", LinePattern.Dashed);
        AddTarget(plot, noDse * InterceptorTarget, $"interceptor target: {Ratio(InterceptorTarget)} no-DSE", LinePattern.Dotted);

        plot.Axes.Bottom.SetTicks([.. Enumerable.Range(0, ticks.Count).Select(i => (double)i)], [.. ticks]);
        plot.Axes.Bottom.TickLabelStyle.FontSize = 14;
        plot.YLabel("max throughput (ops/s)");
        plot.Axes.SetLimits(-0.6, bars.Count - 0.4, 0, bars.Max(b => b.Value) * 1.25);
        plot.ShowLegend(Alignment.UpperRight);
        return ChartStyle.Save(plot, outDir, OutputFile);
    }

    private static Bar Bar(double position, double value, Color color, string label) => new()
    {
        Position = position,
        Value = value,
        Size = 0.6,
        FillColor = color,
        LineWidth = 0,
        Label = label,
        CenterLabel = true,
    };

    private static void AddTarget(Plot plot, double y, string legend, LinePattern pattern)
    {
        var line = plot.Add.HorizontalLine(y, 2, ChartStyle.Reference, pattern);
        line.LegendText = legend;
    }

    private static string Ops(double value) => value.ToString("N0", CultureInfo.InvariantCulture);

    private static string Ratio(double value) => value.ToString("0.00", CultureInfo.InvariantCulture) + "x";
}
