using ScottPlot;

namespace Dse.Charts;

/// <summary>The look every chart shares: size, colours, and the title with its run footnote.</summary>
internal static class ChartStyle
{
    /// <summary>PNG width in pixels.</summary>
    public const int Width = 1100;

    /// <summary>PNG height in pixels.</summary>
    public const int Height = 650;

    /// <summary>Speculative / DSE-interceptor series colour.</summary>
    public static readonly Color Speculative = Color.FromHex("#1f77b4");

    /// <summary>Non-speculative series colour.</summary>
    public static readonly Color NonSpeculative = Color.FromHex("#d62728");

    /// <summary>Baseline (no DSE) colour.</summary>
    public static readonly Color Baseline = Color.FromHex("#7f7f7f");

    /// <summary>A bar that meets its target.</summary>
    public static readonly Color Pass = Color.FromHex("#2ca02c");

    /// <summary>A bar that misses its target.</summary>
    public static readonly Color Fail = Color.FromHex("#d62728");

    /// <summary>Reference lines (group-commit multiples, targets).</summary>
    public static readonly Color Reference = Color.FromHex("#555555");

    // DejaVu Sans ships with Debian's fontconfig; where it is missing, SkiaSharp falls back to its default face.
    private const string FontName = "DejaVu Sans";

    /// <summary>A plot in the shared font, titled, with the run's time and machine in a smaller line under the title.</summary>
    public static Plot Create(string title, BenchmarkReport report)
    {
        var plot = new Plot();
        plot.Font.Set(FontName);
        plot.Title(title);
        plot.Axes.Title.Label.FontSize = 17;
        var footnote = new ScottPlot.Panels.TitlePanel();
        footnote.Label.Text = report.Footnote;
        footnote.Label.FontName = FontName;
        footnote.Label.FontSize = 12;
        footnote.Label.Bold = false;
        plot.Axes.AddPanel(footnote);
        return plot;
    }

    /// <summary>A positive latency from <c>results</c>.</summary>
    /// <exception cref="ChartInputException">The key is missing, not a number, or not positive.</exception>
    public static double Latency(BenchmarkReport report, string key)
    {
        double value = report.Result(key);
        if (value <= 0)
        {
            throw new ChartInputException(report.File, "results." + key, "must be positive");
        }

        return value;
    }

    /// <summary>Adds a line with markers in the shared width.</summary>
    public static void AddSeries(Plot plot, double[] xs, double[] ys, Color color, LinePattern pattern, string legend)
    {
        var line = plot.Add.ScatterLine(xs, ys, color);
        line.LinePattern = pattern;
        line.LineWidth = 2;
        line.MarkerSize = 7;
        line.LegendText = legend;
    }

    /// <summary>Writes the PNG, creating its folder, and returns its path.</summary>
    public static string Save(Plot plot, string outDir, string fileName)
    {
        Directory.CreateDirectory(outDir);
        var path = Path.Combine(outDir, fileName);
        plot.SavePng(path, Width, Height);
        return path;
    }
}
