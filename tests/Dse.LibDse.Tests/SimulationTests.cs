using Xunit.Abstractions;

namespace Dse.Tests;

[Trait("Category", "Simulation")]
public class SimulationTests(ITestOutputHelper output)
{
    private const int DefaultSeeds = 500;

    [Fact]
    public Task Simulation_RandomCrashesMessagesAndBarriers_KeepsSafetyAndLiveness() => RunSeedsAsync(onDevices: false, SeedRange());

    /// <summary>The same runs with every version going through a SnapshotLog on a crash-cut device, recovered by scanning.</summary>
    [Fact]
    public Task Simulation_OnCrashCutDevices_KeepsSafetyAndLiveness()
    {
        return RunSeedsAsync(onDevices: true, SeedRange());
    }

    /// <summary>The in-memory runs against a journaled coordinator that crashes at random points and recovers.</summary>
    [Fact]
    public Task Simulation_WithCoordinatorCrashes_KeepsSafetyAndLiveness()
    {
        return RunSeedsAsync(onDevices: false, SeedRange(), coordinatorCrashes: true);
    }

    [Theory]
    [InlineData(false, false)]
    [InlineData(true, false)]
    [InlineData(false, true)]
    public async Task Simulation_SameSeed_ReplaysIdentically(bool onDevices, bool coordinatorCrashes)
    {
        int seed = SeedRange().First;
        var first = new Simulation(seed, onDevices, coordinatorCrashes);
        await first.RunAsync();
        var second = new Simulation(seed, onDevices, coordinatorCrashes);
        await second.RunAsync();

        Assert.Equal(first.Fingerprint, second.Fingerprint);
        Assert.Equal(first.Stats.ToString(), second.Stats.ToString());
    }

    private async Task RunSeedsAsync(bool onDevices, (int First, int Count) range, bool coordinatorCrashes = false)
    {
        var (first, count) = range;
        var total = new SimulationStats();
        for (int seed = first; seed < first + count; seed++)
        {
            var sim = new Simulation(seed, onDevices, coordinatorCrashes);
            try
            {
                await sim.RunAsync();
            }
            catch (Exception ex)
            {
                throw new SimulationFailedException(
                    $"Simulation ({Variant(onDevices, coordinatorCrashes)}) failed with seed {seed}: {ex.Message}{Environment.NewLine}Replay it with: DSE_SIM_SEED={seed} dotnet test Dse.sln --filter Category=Simulation",
                    ex);
            }

            total.Add(sim.Stats);
        }

        output.WriteLine($"{Variant(onDevices, coordinatorCrashes)}: {count} seeds from {first}: {total}");

        // The runs must actually exercise the protocol, or passing means nothing.
        Assert.True(total.Crashes > 0 && total.Restores > 0 && total.Discarded > 0 && total.BarriersPassed > 0 && total.LostStateMessagesDiscarded > 0, $"the simulation did not exercise failures: {total}");
        if (coordinatorCrashes && count >= 20)
        {
            Assert.True(total.CoordinatorCrashes > 0 && total.TornJournalAppends > 0 && total.ConnectRetries > 0, $"the simulation did not exercise coordinator crashes: {total}");
        }
    }

    private static string Variant(bool onDevices, bool coordinatorCrashes) =>
        (onDevices ? "on devices" : "in memory") + (coordinatorCrashes ? ", with coordinator crashes" : string.Empty);

    private static (int First, int Count) SeedRange()
    {
        var single = Environment.GetEnvironmentVariable("DSE_SIM_SEED");
        if (!string.IsNullOrEmpty(single))
        {
            return (int.Parse(single, System.Globalization.CultureInfo.InvariantCulture), 1);
        }

        var seeds = Environment.GetEnvironmentVariable("DSE_SIM_SEEDS");
        return (1, string.IsNullOrEmpty(seeds) ? DefaultSeeds : int.Parse(seeds, System.Globalization.CultureInfo.InvariantCulture));
    }

    private sealed class SimulationFailedException(string message, Exception inner) : Exception(message, inner);
}
