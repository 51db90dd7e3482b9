using System.Buffers.Binary;
using SkiaSharp;

namespace Dse.Charts.Tests;

public sealed class ChartRunnerTests : IDisposable
{
    private static readonly byte[] PngSignature = [0x89, (byte)'P', (byte)'N', (byte)'G', 0x0D, 0x0A, 0x1A, 0x0A];

    private readonly ResultsFolder _folder = new();
    private readonly StringWriter _output = new();
    private readonly StringWriter _error = new();

    public void Dispose() => _folder.Dispose();

    [Fact]
    public void Run_SyntheticResults_WritesAllChartsAsPng()
    {
        _folder.WriteTwoPc(transactions: 3000);
        _folder.WriteInterceptor();
        _folder.WriteDarqReflect();
        _folder.WriteTravel();

        var exit = Run();

        Assert.True(exit == ChartRunner.Success, _error.ToString());
        Assert.Equal(string.Empty, _error.ToString());
        foreach (var file in new[] { CommitLatencyChart.HistogramFile, CommitLatencyChart.CdfFile, InterceptorOverheadChart.OutputFile, DarqReflectChart.OutputFile, TravelLatencyChart.OutputFile })
        {
            AssertDrawnPng(Path.Combine(_folder.Output, file));
            Assert.Contains(file, _output.ToString(), StringComparison.Ordinal);
        }
    }

    [Fact]
    public void Run_TwoPcWithoutSamples_DrawsSummaryAndNoCdf()
    {
        _folder.WriteTwoPc(transactions: 0);

        var exit = Run();

        Assert.Equal(ChartRunner.Success, exit);
        AssertDrawnPng(Path.Combine(_folder.Output, CommitLatencyChart.HistogramFile));
        Assert.False(File.Exists(Path.Combine(_folder.Output, CommitLatencyChart.CdfFile)));
        Assert.Contains("summary percentiles only", _output.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Run_NoResultFiles_SkipsEachChartWithMessage()
    {
        var exit = Run();

        Assert.Equal(ChartRunner.Success, exit);
        Assert.Contains($"skip: {Path.Combine(_folder.Results, "2pc.json")} not found", _output.ToString(), StringComparison.Ordinal);
        Assert.Contains($"skip: {Path.Combine(_folder.Results, "interceptor.json")} not found", _output.ToString(), StringComparison.Ordinal);
        Assert.False(Directory.Exists(_folder.Output));
    }

    [Fact]
    public void Run_TruncatedJson_FailsNamingFileAndPosition()
    {
        var path = _folder.Write("2pc.json", """{ "scenario": "2pc", "results": { "spec_mean_ms": """);
        _folder.WriteInterceptor();

        var exit = Run();

        Assert.Equal(ChartRunner.InputError, exit);
        Assert.Contains($"error: {path}: line 1, byte ", _error.ToString(), StringComparison.Ordinal);
        Assert.Contains("not valid JSON", _error.ToString(), StringComparison.Ordinal);
        // The other chart is still drawn.
        AssertDrawnPng(Path.Combine(_folder.Output, InterceptorOverheadChart.OutputFile));
    }

    [Fact]
    public void Run_NonNumericResult_FailsNamingField()
    {
        var path = _folder.WriteInterceptor(manualOps: "\"fast\"");

        var exit = Run();

        Assert.Equal(ChartRunner.InputError, exit);
        Assert.Contains($"error: {path}: results.manual_ops: expected a number, found the string \"fast\"", _error.ToString(), StringComparison.Ordinal);
        Assert.False(File.Exists(Path.Combine(_folder.Output, InterceptorOverheadChart.OutputFile)));
    }

    [Fact]
    public void Run_MissingResultsKey_FailsNamingField()
    {
        var path = _folder.Write("interceptor.json", """
            { "scenario": "interceptor", "timestamp_utc": "2026-11-23T05:10:00Z", "results": { "nodse_ops": 100 } }
            """);

        var exit = Run();

        Assert.Equal(ChartRunner.InputError, exit);
        Assert.Contains($"error: {path}: results.manual_ops: missing", _error.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Run_SampleNotANumber_FailsNamingElement()
    {
        var path = _folder.Write("2pc.json", """
            { "scenario": "2pc", "timestamp_utc": "2026-11-23T05:00:00Z", "results": { "group_commit_ms": 10 },
              "samples": { "spec_commit_ms": [1.5, null], "nonspec_commit_ms": [12.0] } }
            """);

        var exit = Run();

        Assert.Equal(ChartRunner.InputError, exit);
        Assert.Contains($"error: {path}: samples.spec_commit_ms[1]: expected a number, found null", _error.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Run_ResultsNotAnObject_FailsNamingField()
    {
        var path = _folder.Write("2pc.json", """{ "scenario": "2pc", "timestamp_utc": "t", "results": [1, 2] }""");

        var exit = Run();

        Assert.Equal(ChartRunner.InputError, exit);
        Assert.Contains($"error: {path}: results: expected an object, found an array", _error.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Run_TravelWithoutTheRateSweep_FailsNamingIt()
    {
        _folder.WriteTravel(sweep: false);

        var exit = Run();

        Assert.Equal(ChartRunner.InputError, exit);
        Assert.Contains("spec_sweep_rates", _error.ToString(), StringComparison.Ordinal);
        Assert.False(File.Exists(Path.Combine(_folder.Output, TravelLatencyChart.OutputFile)));
    }

    [Fact]
    public void Run_TravelWithZeroLatency_FailsNamingField()
    {
        _folder.WriteTravel(specMeanAt5: "0");

        var exit = Run();

        Assert.Equal(ChartRunner.InputError, exit);
        Assert.Contains("spec_mean_ms_s5", _error.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Run_DarqReflectWithZeroLatency_FailsNamingField()
    {
        var path = _folder.WriteDarqReflect(specP50At5: "0");

        var exit = Run();

        Assert.Equal(ChartRunner.InputError, exit);
        Assert.Contains($"error: {path}: results.spec_p50_ms_5hop: must be positive", _error.ToString(), StringComparison.Ordinal);
        Assert.False(File.Exists(Path.Combine(_folder.Output, DarqReflectChart.OutputFile)));
    }

    private int Run() => ChartRunner.Run(_folder.Results, _folder.Output, _output, _error);

    // A PNG of the chart size (panels side by side) that is not blank: decodes, and shows more than a handful of colours.
    private static void AssertDrawnPng(string path)
    {
        Assert.True(File.Exists(path), $"{path} was not written");
        var bytes = File.ReadAllBytes(path);
        Assert.True(bytes.AsSpan().StartsWith(PngSignature), $"{path} does not start with the PNG signature");
        int panels = path.EndsWith(TravelLatencyChart.OutputFile, StringComparison.Ordinal) ? 2 : 1;
        Assert.Equal(panels * ChartStyle.Width, BinaryPrimitives.ReadInt32BigEndian(bytes.AsSpan(16, 4)));
        Assert.Equal(ChartStyle.Height, BinaryPrimitives.ReadInt32BigEndian(bytes.AsSpan(20, 4)));

        using var bitmap = SKBitmap.Decode(bytes);
        Assert.NotNull(bitmap);
        var colours = new HashSet<SKColor>();
        for (var y = 0; y < bitmap.Height; y += 7)
        {
            for (var x = 0; x < bitmap.Width; x += 7)
            {
                colours.Add(bitmap.GetPixel(x, y));
            }
        }

        Assert.True(colours.Count > 8, $"{path} looks blank: {colours.Count} distinct colours");
    }
}
