using Xunit.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>
/// The three-stage search-trend pipeline (<see cref="DarqSearchTrendPipeline"/>) in general speculation: each DARQ a
/// StateObject of one embedded <see cref="ClusterCoordinator"/>, OUT delivered before it is committed, the final alerts
/// read only through the barrier (<see cref="Darq.WaitForRecoverableAsync"/>). With seeded processor kills and whole-DARQ
/// crashes (the coordinator then rolls back every dependent), the recoverable alerts and window counts must equal the
/// failure-free run's exactly, and at least one dependent DARQ must have rolled back.
/// </summary>
[Trait("Category", "Recovery")]
[Trait("Category", "Simulation")]
public sealed class DarqGeneralSpeculationPipelineTests(ITestOutputHelper output)
{
    private const int Events = 3000;
    private const int ChaosActions = 10;
    private const int MaxPlans = 3;
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(90);

    /// <param name="maxBufferedBytes">
    /// Each DARQ's IN budget, when not the default: with a tiny one most IN messages wait in the log only, and every OUT
    /// message is read back from the log when sent (no OUT budget), so OUT messages delivered before their commit wait for
    /// it there.
    /// </param>
    [Theory]
    [InlineData(null)]
    [InlineData(256L)]
    public async Task Pipeline_GeneralSpeculationCrashesAndKills_RecoverableAlertsEqualAFailureFreeRun(long? maxBufferedBytes)
    {
        const string testName = nameof(Pipeline_GeneralSpeculationCrashesAndKills_RecoverableAlertsEqualAFailureFreeRun);
        int seed = DarqSeed.Pick(output, testName);
        string context = DarqSeed.Replay(seed, testName);
        var (windows, alerts) = DarqSearchTrendPipeline.Expected(DarqSearchTrendPipeline.Input(seed, Events));
        Assert.NotEmpty(alerts);

        var (freeWindows, freeAlerts, _) = await RunPipelineAsync(seed, testName, 0, seed, maxBufferedBytes);
        Assert.True(windows.SequenceEqual(freeWindows), $"the failure-free run's window counts differ from the reference; {context}");
        Assert.True(alerts.SequenceEqual(freeAlerts), $"the failure-free run's alerts differ from the reference; {context}");

        // Whether a crash lands while a dependent still holds speculative state is a matter of timing as well as of the
        // seed: a chaos plan whose crashes all find everything committed cascades nothing. Such a run still has to end
        // exactly once; then another plan (same input) is tried, so that the test does exercise a cascade.
        var plans = new List<string>();
        for (int attempt = 0; attempt < MaxPlans; attempt++)
        {
            int planSeed = unchecked(seed + (attempt * 7919));
            var (resultWindows, resultAlerts, pipeline) = await RunPipelineAsync(seed, testName, ChaosActions, planSeed, maxBufferedBytes);
            string chaos = string.Join(", ", pipeline.Actions);
            Assert.True(freeWindows.SequenceEqual(resultWindows),
                $"window counts differ from the failure-free run (expected {freeWindows.Count}, got {resultWindows.Count}; differences (expected, got): "
                + $"{string.Join("; ", freeWindows.Zip(resultWindows).Where(p => p.First != p.Second).Take(6))}); plan {planSeed}, chaos: {chaos}; {context}");
            Assert.True(freeAlerts.SequenceEqual(resultAlerts),
                $"alerts differ: expected [{string.Join(", ", freeAlerts)}], got [{string.Join(", ", resultAlerts)}]; plan {planSeed}, chaos: {chaos}; {context}");
            if (pipeline.DependentRollbacks >= 1)
            {
                return;
            }

            plans.Add($"plan {planSeed}: {pipeline.Rollbacks} rollbacks in all; chaos: {chaos}");
        }

        Assert.Fail($"no dependent DARQ rolled back in {MaxPlans} chaos plans, so rollback never cascaded: {string.Join("; ", plans)}; {context}");
    }

    private async Task<(List<string> Windows, List<string> Alerts, DarqSearchTrendPipeline Pipeline)> RunPipelineAsync(int seed, string testName, int chaosActions,
        int planSeed, long? maxBufferedBytes)
    {
        var pipeline = new DarqSearchTrendPipeline(seed, Events, general: true, maxBufferedBytes);
        using var guard = new CancellationTokenSource(HangGuard);
        try
        {
            var (windows, alerts) = await pipeline.RunAsync(planSeed, chaosActions, guard.Token);
            output.WriteLine($"{chaosActions} chaos actions: {windows.Count} windows, {alerts.Count} alerts, {pipeline.Rollbacks} rollbacks "
                             + $"({pipeline.DependentRollbacks} of dependents), {pipeline.FedFromLog} IN and {pipeline.OutReadFromLog} OUT messages read back from the logs; "
                             + string.Join(", ", pipeline.Actions));
            if (maxBufferedBytes is not null)
            {
                Assert.True(pipeline.OutReadFromLog > 0, "no DARQ of the pipeline spilled an OUT message: the test does not exercise the read-back");
            }

            return (windows, alerts, pipeline);
        }
        catch (Exception e) when (e is not OperationCanceledException || guard.IsCancellationRequested)
        {
            throw new InvalidOperationException(
                $"The general-speculation pipeline with {chaosActions} chaos actions failed: {pipeline.Describe()}; chaos: {string.Join(", ", pipeline.Actions)}; "
                + $"plan {planSeed}; " + DarqSeed.Replay(seed, testName), e);
        }
    }
}
