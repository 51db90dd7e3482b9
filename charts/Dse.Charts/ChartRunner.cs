namespace Dse.Charts;

/// <summary>
/// Draws every chart whose results file exists: a missing file skips its chart with a note; a malformed one is
/// reported (file and field) and makes the run fail after the other charts are drawn.
/// </summary>
internal static class ChartRunner
{
    /// <summary>Exit code: every chart whose input exists was drawn.</summary>
    public const int Success = 0;

    /// <summary>Exit code: at least one results file was malformed.</summary>
    public const int InputError = 1;

    /// <summary>Draws the charts from <paramref name="resultsDir"/> into <paramref name="outDir"/>; returns the exit code.</summary>
    public static int Run(string resultsDir, string outDir, TextWriter output, TextWriter error)
    {
        if (!Directory.Exists(resultsDir))
        {
            error.WriteLine($"error: results folder {resultsDir} does not exist.");
            return InputError;
        }

        var failed = false;
        failed |= !Draw(resultsDir, CommitLatencyChart.InputFile, output, error,
            report => CommitLatencyChart.Render(report, outDir, output));
        failed |= !Draw(resultsDir, InterceptorOverheadChart.InputFile, output, error,
            report => [InterceptorOverheadChart.Render(report, outDir)]);
        failed |= !Draw(resultsDir, DarqReflectChart.InputFile, output, error,
            report => [DarqReflectChart.Render(report, outDir)]);
        failed |= !Draw(resultsDir, TravelLatencyChart.InputFile, output, error,
            report => [TravelLatencyChart.Render(report, outDir)]);
        return failed ? InputError : Success;
    }

    // False only when the file exists but cannot be charted.
    private static bool Draw(
        string resultsDir, string inputFile, TextWriter output, TextWriter error, Func<BenchmarkReport, IReadOnlyList<string>> render)
    {
        var path = Path.Combine(resultsDir, inputFile);
        if (!File.Exists(path))
        {
            output.WriteLine($"skip: {path} not found; its chart is not drawn.");
            return true;
        }

        try
        {
            foreach (var written in render(BenchmarkReport.Read(path)))
            {
                output.WriteLine($"wrote {written}");
            }

            return true;
        }
        catch (ChartInputException ex)
        {
            error.WriteLine($"error: {ex.Message}");
            return false;
        }
    }
}
