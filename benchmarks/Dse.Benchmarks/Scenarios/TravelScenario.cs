using System.Globalization;
using Dse.Benchmarks.Harness;
using Dse.Samples.TravelReservation;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// libDSE's travel-reservation experiment (Fig. 9) through the TravelReservation sample: a frontend hosting the workflow
/// engine books a trip from N reservation services (processes on speculative key-value stores) as a saga, 10 ms group
/// commit. Left panel: 10 trips/s for N = 1..5, speculative against non-speculative. Right panel: N = 3 at a rising
/// arrival rate until the p50 doubles from its 10/s value, both modes. Fails if the consistency checker finds a violation.
/// </summary>
public sealed class TravelScenario : IScenario
{
    /// <summary>The rates the right panel tries, in order, until the p50 is more than twice the 10/s one.</summary>
    private static readonly double[] s_rates = [10, 50, 100, 200, 400, 700, 1000, 1400, 2000];

    private const int SweepServices = 3;

    /// <inheritdoc />
    public string Name => "travel";

    /// <inheritdoc />
    public string Description => "travel-reservation saga on the workflow engine: latency vs services (1..5) and vs rate (N = 3), speculative vs not";

    /// <inheritdoc />
    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var results = new ScenarioResults();
        int violations = 0;

        // Left panel: one cluster per mode serves trips of 1..5 services.
        var panel = await TravelRun.RunAsync(
            new TravelOptions
            {
                Duration = context.Pick(TimeSpan.FromSeconds(12), TimeSpan.FromSeconds(0.5)),
                WarmUpTrips = context.Pick(new TravelOptions().WarmUpTrips, 20),
                Seed = 1,
            },
            context.Log,
            cancellationToken: context.CancellationToken).ConfigureAwait(false);
        violations += panel.Violations.Count;
        ReportViolations(context, panel);
        var p50 = new Dictionary<(string Mode, int Services), double>();
        foreach (var mode in new[] { panel.Speculative!, panel.NonSpeculative! })
        {
            foreach (var configuration in mode.Configurations)
            {
                p50[(mode.Name, configuration.Services)] = P50(configuration);
                string suffix = string.Create(CultureInfo.InvariantCulture, $"s{configuration.Services}");
                results.Add($"{mode.Name}_p50_ms_{suffix}", p50[(mode.Name, configuration.Services)], 2);
                results.Add($"{mode.Name}_mean_ms_{suffix}", configuration.MeanMs, 2);
                results.Add($"{mode.Name}_p95_ms_{suffix}", configuration.P95Ms, 2);
            }
        }

        double specS1 = p50[("spec", 1)];
        double specS5 = p50[("spec", 5)];
        double nonspecS1 = p50[("nonspec", 1)];
        double nonspecS5 = p50[("nonspec", 5)];
        results.Add("ratio_s5", specS5 / nonspecS5, 3);
        results.Add("spec_flatness", specS5 / specS1, 3);
        results.Add("nonspec_growth", nonspecS5 / nonspecS1, 3);

        // Right panel: a fresh cluster per rate and mode, so that each point starts from the same state.
        foreach (bool speculative in new[] { true, false })
        {
            string mode = speculative ? "spec" : "nonspec";
            var rates = new List<double>();
            var p50s = new List<double>();
            double maxRate = 0;
            double baseline = double.NaN;
            foreach (double rate in context.Quick ? s_rates[..1] : s_rates)
            {
                var run = await TravelRun.RunAsync(
                    new TravelOptions
                    {
                        Services = [SweepServices],
                        Rate = rate,
                        Duration = context.Pick(TimeSpan.FromSeconds(Math.Max(4, 200 / rate)), TimeSpan.FromSeconds(0.5)),
                        WarmUpTrips = context.Pick(new TravelOptions().WarmUpTrips, 20),
                        Mode = speculative ? TravelMode.Speculative : TravelMode.NonSpeculative,
                        Seed = 2,
                    },
                    context.Log,
                    cancellationToken: context.CancellationToken).ConfigureAwait(false);
                violations += run.Violations.Count;
                ReportViolations(context, run);
                var configuration = (speculative ? run.Speculative! : run.NonSpeculative!).Configurations[0];
                double ratePoint = P50(configuration);
                context.Log.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{mode} N={SweepServices} at {rate}/s: p50 {ratePoint:F2} ms, {configuration.Confirmed} confirmed, {configuration.Failed} failed, {configuration.Unanswered} unanswered in {configuration.Elapsed.TotalSeconds:F1} s"));
                rates.Add(rate);
                p50s.Add(ratePoint);
                baseline = double.IsNaN(baseline) ? ratePoint : baseline;
                bool kept = configuration.Unanswered == 0 && ratePoint <= 2 * baseline;
                if (!kept)
                {
                    break;
                }

                maxRate = rate;
            }

            results.Add($"max_rate_{mode}", maxRate, 0);
            results.AddSamples($"{mode}_sweep_rates", rates);
            results.AddSamples($"{mode}_sweep_p50_ms", p50s);
        }

        results.Add("violations", violations, 0);
        results.Add("sweep_services", SweepServices, 0);
        results.Add("group_commit_ms", 10, 0);
        if (violations > 0)
        {
            throw new InvalidOperationException($"The travel checker found {violations} violations (listed above).");
        }

        return results;
    }

    /// <summary>The median latency of a configuration's confirmed trips.</summary>
    private static double P50(ConfigurationResult configuration)
    {
        if (configuration.LatenciesMs.Count == 0)
        {
            throw new InvalidOperationException($"Trips of {configuration.Services} services confirmed none: nothing to measure.");
        }

        var sorted = configuration.LatenciesMs.ToArray();
        Array.Sort(sorted);
        return Stats.Percentile(sorted, 0.5);
    }

    private static void ReportViolations(ScenarioContext context, TravelResults run)
    {
        foreach (string violation in run.Violations)
        {
            context.Log.WriteLine($"violation: {violation}");
        }
    }
}
