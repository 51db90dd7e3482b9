using System.Globalization;
using ScottPlot;
using ScottPlot.TickGenerators;

namespace Dse.Charts;

/// <summary>
/// The travel scenario (<c>travel.json</c>, libDSE's Fig. 9): a trip booked as a saga on the workflow engine. Left:
/// mean (solid) and p95 (dashed) latency for trips of 1..5 services at 10 trips/s, speculative against non-speculative.
/// Right: p50 latency (log scale) for trips of 3 services as the arrival rate rises, both modes.
/// </summary>
internal static class TravelLatencyChart
{
    /// <summary>The results file this chart reads.</summary>
    public const string InputFile = "travel.json";

    /// <summary>The chart file.</summary>
    public const string OutputFile = "travel-latency.png";

    /// <summary>The largest trip the scenario measures, in services.</summary>
    public const int MaxServices = 5;

    /// <summary>Renders the chart from <paramref name="report"/>; returns its path.</summary>
    /// <exception cref="ChartInputException">A field the chart needs is missing or malformed.</exception>
    public static string Render(BenchmarkReport report, string outDir)
    {
        var left = ServicesPanel(report);
        var right = RatePanel(report);
        var multiplot = new Multiplot(left);
        multiplot.AddPlot(right);
        multiplot.Layout = new ScottPlot.MultiplotLayouts.Columns();
        Directory.CreateDirectory(outDir);
        string path = Path.Combine(outDir, OutputFile);
        multiplot.SavePng(path, ChartStyle.Width * 2, ChartStyle.Height);
        return path;
    }

    private static Plot ServicesPanel(BenchmarkReport report)
    {
        var services = new double[MaxServices];
        var specMean = new double[MaxServices];
        var specP95 = new double[MaxServices];
        var nonSpecMean = new double[MaxServices];
        var nonSpecP95 = new double[MaxServices];
        for (int n = 1; n <= MaxServices; n++)
        {
            services[n - 1] = n;
            specMean[n - 1] = ChartStyle.Latency(report, $"spec_mean_ms_s{n}");
            specP95[n - 1] = ChartStyle.Latency(report, $"spec_p95_ms_s{n}");
            nonSpecMean[n - 1] = ChartStyle.Latency(report, $"nonspec_mean_ms_s{n}");
            nonSpecP95[n - 1] = ChartStyle.Latency(report, $"nonspec_p95_ms_s{n}");
        }

        var plot = ChartStyle.Create("Travel reservation at 10 trips/s: latency vs services", report);
        ChartStyle.AddSeries(plot, services, specMean, ChartStyle.Speculative, LinePattern.Solid, "speculative mean");
        ChartStyle.AddSeries(plot, services, specP95, ChartStyle.Speculative, LinePattern.Dashed, "speculative p95");
        ChartStyle.AddSeries(plot, services, nonSpecMean, ChartStyle.NonSpeculative, LinePattern.Solid, "non-speculative mean");
        ChartStyle.AddSeries(plot, services, nonSpecP95, ChartStyle.NonSpeculative, LinePattern.Dashed, "non-speculative p95");

        double ratio = report.Result("ratio_s5");
        double flatness = report.Result("spec_flatness");
        double top = Math.Max(nonSpecP95.Max(), specP95.Max()) * 1.2;
        var note = plot.Add.Text(
            $"p50 at 5 services: speculative {Ratio(ratio)} non-speculative (target <= 0.30x),\n{Ratio(flatness)} its 1-service p50 (target <= 1.50x)",
            2.2, top * 0.97);
        note.LabelFontSize = 12;
        note.LabelFontColor = ratio <= 0.3 && flatness <= 1.5 ? ChartStyle.Pass : ChartStyle.Fail;
        plot.Axes.Bottom.SetTicks(services, ["1", "2", "3", "4", "5"]);
        plot.XLabel("services per trip");
        plot.YLabel("trip latency (ms)");
        plot.Axes.SetLimits(0.8, MaxServices + 0.2, 0, top);
        plot.ShowLegend(Alignment.UpperLeft);
        return plot;
    }

    private static Plot RatePanel(BenchmarkReport report)
    {
        int services = (int)report.ResultOr("sweep_services", 3);
        var plot = ChartStyle.Create($"Travel reservation, {services} services: p50 latency vs arrival rate", report);
        double top = 0;
        double bottom = double.MaxValue;
        double right = 0;
        foreach (var (mode, color, legend) in new[] { ("spec", ChartStyle.Speculative, "speculative"), ("nonspec", ChartStyle.NonSpeculative, "non-speculative") })
        {
            var rates = report.Samples($"{mode}_sweep_rates") ?? throw new ChartInputException(report.File, $"samples.{mode}_sweep_rates", "is missing");
            var p50 = report.Samples($"{mode}_sweep_p50_ms") ?? throw new ChartInputException(report.File, $"samples.{mode}_sweep_p50_ms", "is missing");
            if (rates.Length == 0 || rates.Length != p50.Length)
            {
                throw new ChartInputException(report.File, $"samples.{mode}_sweep_p50_ms", "must have one value per rate");
            }

            if (p50.Any(value => !(value > 0)))
            {
                throw new ChartInputException(report.File, $"samples.{mode}_sweep_p50_ms", "must be positive (the axis is logarithmic)");
            }

            // Logarithmic: a saturated mode's seconds would otherwise flatten the other's milliseconds.
            ChartStyle.AddSeries(plot, rates, [.. p50.Select(Math.Log10)], color, LinePattern.Solid, $"{legend} p50 (highest rate within 2x of the 10/s p50: {report.ResultOr($"max_rate_{mode}", double.NaN).ToString("0", CultureInfo.InvariantCulture)}/s)");
            top = Math.Max(top, p50.Max());
            bottom = Math.Min(bottom, p50.Min());
            right = Math.Max(right, rates.Max());
        }

        plot.XLabel("arrival rate (trips/s)");
        plot.YLabel("p50 trip latency (ms, log scale)");
        plot.Axes.Left.TickGenerator = new NumericAutomatic
        {
            MinorTickGenerator = new LogMinorTickGenerator(),
            IntegerTicksOnly = true,
            LabelFormatter = y => Math.Pow(10, y).ToString("0.###", CultureInfo.InvariantCulture),
        };
        plot.Axes.SetLimits(0, right * 1.05, Math.Floor(Math.Log10(bottom * 0.9)), Math.Ceiling(Math.Log10(top * 1.4)));
        plot.ShowLegend(Alignment.UpperLeft);
        return plot;
    }

    private static string Ratio(double value) => value.ToString("0.00", CultureInfo.InvariantCulture) + "x";
}
