using Dse.Darq;
using Dse.Samples.SearchTrend;

namespace Dse.Samples.Tests;

/// <summary>
/// The search-trend sample (three DARQs, filter -> count -> alert, on local files): in every speculation mode, with a
/// processor killed mid-window, the filter DARQ crashed mid-window (the source resends what it lost under the same
/// producer id) and the alert DARQ restarted while a summary is on its way, the alerts equal those computed straight
/// from the input.
/// </summary>
[Trait("Category", "Recovery")]
public sealed class SearchTrendSampleTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(120);

    [Theory]
    [InlineData(DarqSpeculationMode.Off)]
    [InlineData(DarqSpeculationMode.IntraParticipant)]
    [InlineData(DarqSpeculationMode.General)]
    public async Task RunAsync_WithChaos_AlertsEqualTheInputsOwnResult(DarqSpeculationMode mode)
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var options = new SearchTrendOptions { Speculation = mode, Windows = 12, WindowSize = 60, Chaos = true, Seed = 11 };
        var input = SearchInput.Windows(options.Seed, options.Windows, options.WindowSize);
        var expected = SearchInput.Expected(input, options.Threshold);
        Assert.NotEmpty(expected.Alerts);

        await using var pipeline = await SearchTrendPipeline.StartAsync(options);
        var latencies = await pipeline.RunAsync(input, guard.Token);

        Assert.Equal(options.Windows - 1, latencies.Length);
        Assert.Equal(expected.Windows, pipeline.Result.Windows);
        Assert.Equal(expected.Alerts, pipeline.Result.Alerts);
        Assert.Contains(pipeline.Events, e => e.Contains("crashed the filter DARQ", StringComparison.Ordinal));

        // One registration per stage at the start, one per kill, crash or restart; under general speculation one more per rollback.
        Assert.True(pipeline.Registrations["filter"] >= 2, $"filter registered {pipeline.Registrations["filter"]} processors");
        Assert.True(pipeline.Registrations["count"] >= 2, $"count registered {pipeline.Registrations["count"]} processors");
        Assert.True(pipeline.Registrations["alert"] >= 2, $"alert registered {pipeline.Registrations["alert"]} processors");
        if (mode != DarqSpeculationMode.General)
        {
            Assert.Equal(2, pipeline.Registrations["filter"]);
            Assert.Equal(2, pipeline.Registrations["count"]);
            Assert.Equal(2, pipeline.Registrations["alert"]);
        }

    }

    [Fact]
    public void Expected_CountsEachWindowWithoutStopWordsAndAlertsAboveTheThreshold()
    {
        List<List<string>> input =
        [
            ["E darq 0", "E the 1", "E darq 2", "E log 3", "W 0"],
            ["E the 4", "E a 5", "E log 6", "E log 7", "W 1"],
        ];

        var result = SearchInput.Expected(input, threshold: 1);

        Assert.Equal(["0 darq=2;log=1", "1 log=2"], result.Windows);
        Assert.Equal(["window 0: darq x2", "window 1: log x2"], result.Alerts);
        Assert.True(AlertState.Parse(result.ToString()).SameAs(result));
    }
}
