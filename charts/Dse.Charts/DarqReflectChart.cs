using System.Globalization;
using ScottPlot;

namespace Dse.Charts;

/// <summary>
/// The darq-reflect scenario (<c>darq-reflect.json</c>, the DARQ paper's Fig. 10): end-to-end latency of a message
/// reflected through a chain of 1..5 DARQs, speculative against non-speculative, p50 solid and p99 dashed.
/// </summary>
internal static class DarqReflectChart
{
    /// <summary>The results file this chart reads.</summary>
    public const string InputFile = "darq-reflect.json";

    /// <summary>The chart file.</summary>
    public const string OutputFile = "darq-reflect-latency.png";

    /// <summary>Chain lengths the scenario measures.</summary>
    public const int MaxHops = 5;

    /// <summary>Renders the chart from <paramref name="report"/>; returns its path.</summary>
    /// <exception cref="ChartInputException">A field the chart needs is missing or malformed.</exception>
    public static string Render(BenchmarkReport report, string outDir)
    {
        var hops = new double[MaxHops];
        var specP50 = new double[MaxHops];
        var specP99 = new double[MaxHops];
        var nonSpecP50 = new double[MaxHops];
        var nonSpecP99 = new double[MaxHops];
        for (int k = 1; k <= MaxHops; k++)
        {
            hops[k - 1] = k;
            specP50[k - 1] = ChartStyle.Latency(report, $"spec_p50_ms_{k}hop");
            specP99[k - 1] = ChartStyle.Latency(report, $"spec_p99_ms_{k}hop");
            nonSpecP50[k - 1] = ChartStyle.Latency(report, $"nonspec_p50_ms_{k}hop");
            nonSpecP99[k - 1] = ChartStyle.Latency(report, $"nonspec_p99_ms_{k}hop");
        }

        double commitMs = report.ResultOr("commit_interval_ms", double.NaN);
        string interval = double.IsNaN(commitMs) ? string.Empty : $", {Ms(commitMs)} commit interval";
        var plot = ChartStyle.Create($"DARQ chain latency vs hops{interval}: speculative vs non-speculative", report);
        ChartStyle.AddSeries(plot, hops, specP50, ChartStyle.Speculative, LinePattern.Solid, "speculative p50");
        ChartStyle.AddSeries(plot, hops, specP99, ChartStyle.Speculative, LinePattern.Dashed, "speculative p99");
        ChartStyle.AddSeries(plot, hops, nonSpecP50, ChartStyle.NonSpeculative, LinePattern.Solid, "non-speculative p50");
        ChartStyle.AddSeries(plot, hops, nonSpecP99, ChartStyle.NonSpeculative, LinePattern.Dashed, "non-speculative p99");

        // The two targets of the scenario, read off the p50s at five hops.
        double flat = specP50[MaxHops - 1] / specP50[0];
        double saving = specP50[MaxHops - 1] / nonSpecP50[MaxHops - 1];
        var note = plot.Add.Text(
            $"5 hops: speculative {Ratio(flat)} its 1-hop p50 (target <= 1.50x), {Ratio(saving)} non-speculative (target <= 0.30x)",
            1.7, Math.Max(nonSpecP99.Max(), specP99.Max()) * 1.15);
        note.LabelFontSize = 13;
        note.LabelFontColor = flat <= 1.5 && saving <= 0.3 ? ChartStyle.Pass : ChartStyle.Fail;

        plot.Axes.Bottom.SetTicks(hops, ["1", "2", "3", "4", "5"]);
        plot.XLabel("DARQ hops");
        plot.YLabel("end-to-end latency (ms)");
        plot.Axes.SetLimits(0.8, MaxHops + 0.2, 0, Math.Max(nonSpecP99.Max(), specP99.Max()) * 1.2);
        plot.ShowLegend(Alignment.UpperLeft);
        return ChartStyle.Save(plot, outDir, OutputFile);
    }

    private static string Ms(double value) => value.ToString("0.#", CultureInfo.InvariantCulture) + " ms";

    private static string Ratio(double value) => value.ToString("0.00", CultureInfo.InvariantCulture) + "x";
}
