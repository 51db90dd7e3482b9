using Dse.Samples.TravelReservation;
using Dse.Testing;
using Xunit.Abstractions;

namespace Dse.Samples.Tests;

/// <summary>
/// The travel reservation sample end to end: real clusters of local processes (DSE coordinator, frontend with the
/// workflow engine, reservation services), the open-loop load, and the consistency check of every store.
/// </summary>
[Trait("Category", "MultiProcess")]
public class TravelReservationSampleTests(ITestOutputHelper output)
{
    // Generous: the default run takes about a minute on a busy 2-core machine; this only bounds a hang.
    private static readonly TimeSpan s_defaultRunTimeout = TimeSpan.FromMinutes(6);

    [Fact]
    public async Task Run_Defaults_PrintsTheTableOfBothModesForOneToFiveServicesAndNoViolation()
    {
        var run = await BuiltProgram.RunAsync("samples/TravelReservation", "TravelReservation.dll", [], s_defaultRunTimeout);
        output.WriteLine(run.Describe());

        Assert.False(run.TimedOut, $"the default run took longer than {s_defaultRunTimeout}");
        Assert.Equal(0, run.ExitCode);
        var lines = run.OutputLines;
        Assert.Equal("violations 0", lines[^1]);
        for (int n = 1; n <= 5; n++)
        {
            Assert.Contains(lines, line => line.StartsWith($"spec    N={n}: 30 trips", StringComparison.Ordinal));
            Assert.Contains(lines, line => line.StartsWith($"nonspec N={n}: 30 trips", StringComparison.Ordinal));

            // A table row: N, then both modes' mean and p95 and their ratio, all measured.
            var row = lines.Single(line => line.StartsWith($"{n} ", StringComparison.Ordinal) && line.EndsWith('x'));
            Assert.DoesNotContain(" - ", row, StringComparison.Ordinal);
        }

        Assert.Contains(lines, line => line == "spec: checked 230 trips against every store; kills 0; violations 0");
        Assert.Contains(lines, line => line == "nonspec: checked 230 trips against every store; kills 0; violations 0");
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task RunAsync_ChaosKillsAServiceAndTheFrontend_EveryTripAnsweredAndNoViolation()
    {
        const int seed = 20261128;
        var options = new TravelOptions { Services = [3], Duration = TimeSpan.FromSeconds(6), Mode = TravelMode.Speculative, Chaos = true, Seed = seed };
        var writer = new TestOutputWriter(output);

        var results = await TravelRun.RunAsync(options, writer, configuration => TravelReport.WriteConfiguration(writer, configuration), cancellationToken: default);

        var run = results.Speculative;
        Assert.NotNull(run);
        TravelChecker.Write(writer, results.Violations);
        string replay = $"seed {seed}: replay with dotnet run -c Release --project samples/TravelReservation -- --mode spec --services 3 --duration 6 --chaos --seed {seed}";
        Assert.True(run.Violations.Count == 0, replay);
        Assert.Equal(2, run.Kills);
        var configuration = Assert.Single(run.Configurations);
        Assert.Equal(60, configuration.Trips.Count);
        Assert.True(configuration.Unanswered == 0, $"{configuration.Unanswered} trips got no outcome; {replay}");
        Assert.True(configuration.Confirmed > 0, replay);
    }
}
