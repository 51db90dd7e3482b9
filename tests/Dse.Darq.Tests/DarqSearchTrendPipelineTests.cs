using Xunit.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>
/// The three-stage search-trend pipeline (<see cref="DarqSearchTrendPipeline"/>) fed seeded search events: without
/// failures, and with seeded processor kills and DARQ crashes; the alert stage's recovered state must equal the
/// failure-free result exactly (every window once, in order, with its counts, and the same alerts).
/// </summary>
[Trait("Category", "Recovery")]
public sealed class DarqSearchTrendPipelineTests(ITestOutputHelper output)
{
    private const int Events = 6000;
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(90);

    [Fact]
    public Task Pipeline_NoFailures_AlertsEqualTheReference()
        => RunAsync(nameof(Pipeline_NoFailures_AlertsEqualTheReference), chaosActions: 0);

    [Fact]
    public Task Pipeline_RandomProcessorKillsAndDarqCrashes_AlertsEqualAFailureFreeRun()
        => RunAsync(nameof(Pipeline_RandomProcessorKillsAndDarqCrashes_AlertsEqualAFailureFreeRun), chaosActions: 20);

    [Fact]
    public Task Pipeline_RandomKillsAndCrashesWithMostMessagesSpilled_AlertsEqualAFailureFreeRun()
        => RunAsync(nameof(Pipeline_RandomKillsAndCrashesWithMostMessagesSpilled_AlertsEqualAFailureFreeRun), chaosActions: 20, maxBufferedBytes: 256);

    /// <param name="testName">Names the seed's replay.</param>
    /// <param name="chaosActions">Seeded processor kills and DARQ crashes in the run compared with the failure-free one.</param>
    /// <param name="maxBufferedBytes">Each DARQ's IN budget, when not the default: a tiny one reads most IN messages back from the log (and every OUT message is, see <see cref="DarqSearchTrendPipeline"/>).</param>
    private async Task RunAsync(string testName, int chaosActions, long? maxBufferedBytes = null)
    {
        int seed = DarqSeed.Pick(output, testName);
        var input = DarqSearchTrendPipeline.Input(seed, Events);
        var (windows, alerts) = DarqSearchTrendPipeline.Expected(input);
        Assert.NotEmpty(alerts);

        if (chaosActions > 0)
        {
            // The failure-free run of the same input, which the run with failures must match.
            (windows, alerts) = await RunPipelineAsync(seed, testName, 0, maxBufferedBytes);
        }

        var (resultWindows, resultAlerts) = await RunPipelineAsync(seed, testName, chaosActions, maxBufferedBytes);
        string context = DarqSeed.Replay(seed, testName);
        Assert.True(windows.SequenceEqual(resultWindows),
            $"window counts differ from the failure-free result (expected {windows.Count}, got {resultWindows.Count}; first difference: "
            + $"{windows.Zip(resultWindows).FirstOrDefault(p => p.First != p.Second)}); {context}");
        Assert.True(alerts.SequenceEqual(resultAlerts), $"alerts differ: expected [{string.Join(", ", alerts)}], got [{string.Join(", ", resultAlerts)}]; {context}");
    }

    private async Task<(List<string> Windows, List<string> Alerts)> RunPipelineAsync(int seed, string testName, int chaosActions, long? maxBufferedBytes)
    {
        var pipeline = new DarqSearchTrendPipeline(seed, Events, maxBufferedBytes: maxBufferedBytes);
        using var guard = new CancellationTokenSource(HangGuard);
        try
        {
            var result = await pipeline.RunAsync(seed, chaosActions, guard.Token);
            output.WriteLine($"{result.Windows.Count} windows, {result.Alerts.Count} alerts, {pipeline.FedFromLog} IN and {pipeline.OutReadFromLog} OUT messages read back from the logs; chaos: {string.Join(", ", pipeline.Actions)}");
            if (maxBufferedBytes is not null)
            {
                Assert.True(pipeline.FedFromLog > 0, "no DARQ of the pipeline spilled an IN message: the test does not exercise the read-back");
                Assert.True(pipeline.OutReadFromLog > 0, "no DARQ of the pipeline spilled an OUT message: the test does not exercise the read-back");
            }

            return result;
        }
        catch (Exception e) when (e is not OperationCanceledException || guard.IsCancellationRequested)
        {
            throw new InvalidOperationException(
                $"The pipeline with {chaosActions} chaos actions failed: {pipeline.Describe()}; chaos: {string.Join(", ", pipeline.Actions)}; "
                + DarqSeed.Replay(seed, testName), e);
        }
    }
}
