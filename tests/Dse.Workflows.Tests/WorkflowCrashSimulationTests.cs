using System.Collections.Concurrent;
using System.Globalization;
using Xunit.Abstractions;

namespace Dse.Workflows.Tests;

/// <summary>
/// A seeded simulation of the engine under crashes: random workflows (single steps, parallel pairs, signal waits) run
/// against a speculative service while the workflow host and the service are killed at random points and restarted on
/// their storage. The oracle: every workflow ends with the result it would have without crashes, and the service's
/// surviving state holds every step's effect exactly once, and nothing else.
/// </summary>
public sealed class WorkflowCrashSimulationTests(ITestOutputHelper output)
{
    private const int DefaultSeeds = 12;

    // From this many seeds on, a run must also have re-issued steps and reloaded after rollbacks.
    private const int LongRun = 50;
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(60);

    // Longer than the log's: a service crash finds versions the log already depends on and the service has not persisted.
    private static readonly TimeSpan ServiceGroupCommit = TimeSpan.FromMilliseconds(30);

    [Fact]
    [Trait("Category", "Simulation")]
    public async Task CrashSimulation_HostAndServiceKilledAtRandom_ResultsAsWithoutCrashesAndEveryStepActsOnce()
    {
        var (first, count) = SeedRange();
        var total = new Stats();
        for (int seed = first; seed < first + count; seed++)
        {
            try
            {
                await RunSeedAsync(seed, total);
            }
            catch (Exception ex)
            {
                throw new InvalidOperationException(
                    $"The workflow crash simulation failed with seed {seed}: {ex.Message}{Environment.NewLine}Replay it with: DSE_WORKFLOW_SEED={seed} dotnet test tests/Dse.Workflows.Tests -c Release --filter Category=Simulation",
                    ex);
            }
        }

        output.WriteLine($"{count} seeds from {first}: {total}");

        // The seeds fix the crash schedule, so every run crashes both. Whether a crash finds a step in flight or a
        // dependency the service had not persisted depends on timing: a long run must meet both, a short one may not
        // (WorkflowReplayTests and WorkflowRollbackTests pin those two paths deterministically).
        Assert.True(total.HostCrashes > 0 && total.ServiceCrashes > 0, $"the simulation did not crash the host and the service: {total}");
        if (count >= LongRun)
        {
            Assert.True(total.ReissuedSteps > 0 && total.Reloads > 0, $"{count} seeds did not exercise re-issued steps and reloads: {total}");
        }
    }

    private static async Task RunSeedAsync(int seed, Stats stats)
    {
        var random = new Random(seed);
        var storage = new ConcurrentDictionary<long, (Dictionary<string, int> State, byte[] Metadata)>();
        var calls = new ConcurrentDictionary<string, int>();
        CountingService service = null!;
        var stepOptions = new StepOptions { MaxAttempts = 100, InitialBackoff = TimeSpan.FromMilliseconds(5), MaxBackoff = TimeSpan.FromMilliseconds(50) };

        async Task<string> CallAsync(StepContext step, CancellationToken ct)
        {
            calls.AddOrUpdate(step.IdempotencyKey, 1, (_, n) => n + 1);
            await Task.Delay(Random.Shared.Next(0, 4), ct); // steps take a while, so crashes find some in flight
            await service.CallAsync(step.IdempotencyKey, ct);
            await Task.Delay(Random.Shared.Next(0, 4), ct);
            return step.IdempotencyKey;
        }

        Action<WorkflowRegistry> register = r => r.Register<string, string>("sim", async (ctx, program) =>
        {
            var results = new List<string>();
            foreach (char op in program)
            {
                switch (op)
                {
                    case 'S':
                        results.Add(await ctx.CallAsync("single", CallAsync, stepOptions));
                        break;
                    case 'P':
                        var left = ctx.CallAsync("left", CallAsync, stepOptions);
                        var right = ctx.CallAsync("right", CallAsync, stepOptions);
                        await Task.WhenAll(left, right);
                        results.Add(left.Result + "+" + right.Result);
                        break;
                    default:
                        results.Add(await ctx.WaitForSignalAsync<string>("go"));
                        break;
                }
            }

            return string.Join(",", results);
        });

        await using var h = await WorkflowHarness.StartAsync(register);
        service = new CountingService(h.Options(2, ServiceGroupCommit), storage, durable: true);
        await service.ConnectAsync(h.Coordinator);

        int workflows = random.Next(2, 5);
        var programs = new Dictionary<string, string>();
        for (int w = 0; w < workflows; w++)
        {
            string id = $"w{w}";
            programs[id] = new string([.. Enumerable.Range(0, random.Next(2, 7)).Select(_ => "SSPG"[random.Next(4)])]);
            await h.Engine.StartWorkflowAsync("sim", id, programs[id]);
            foreach (char _ in programs[id].Where(op => op == 'G'))
            {
                await h.Engine.SignalAsync(id, "go", $"{id}-signal");
            }
        }

        // Crashes at random moments while the workflows run.
        int crashes = random.Next(1, 4);
        for (int c = 0; c < crashes; c++)
        {
            await Task.Delay(random.Next(0, 40));
            if (random.Next(2) == 0)
            {
                stats.Reloads += (int)h.Engine.Generations - 1;
                await h.RestartAsync(register);
                stats.HostCrashes++;
            }
            else
            {
                await service.DisposeAsync();
                service = new CountingService(h.Options(2, ServiceGroupCommit), storage, durable: true);
                await service.ConnectAsync(h.Coordinator);
                stats.ServiceCrashes++;
            }
        }

        var expectedKeys = new HashSet<string>();
        foreach (var (id, program) in programs)
        {
            var (expected, keys) = Expected(id, program);
            expectedKeys.UnionWith(keys);
            string result = await h.Engine.GetResultAsync<string>(id).AsTask().WaitAsync(Timeout);
            Assert.Equal(expected, result);
        }

        // Every step's effect survives exactly once, and no effect survives that no step of the final histories made.
        var acted = service.ActedKeys();
        Assert.Equal(expectedKeys.Order(), acted.Order());
        stats.ReissuedSteps += calls.Values.Count(n => n > 1);
        stats.Reloads += (int)h.Engine.Generations - 1;
        await service.DisposeAsync();
    }

    private static (string Result, List<string> Keys) Expected(string id, string program)
    {
        var results = new List<string>();
        var keys = new List<string>();
        int seq = 0;
        foreach (char op in program)
        {
            string Key() => string.Create(CultureInfo.InvariantCulture, $"{id}/1/{seq++}");
            switch (op)
            {
                case 'S':
                    string single = Key();
                    keys.Add(single);
                    results.Add(single);
                    break;
                case 'P':
                    string left = Key();
                    string right = Key();
                    keys.Add(left);
                    keys.Add(right);
                    results.Add(left + "+" + right);
                    break;
                default:
                    results.Add($"{id}-signal");
                    break;
            }
        }

        return (string.Join(",", results), keys);
    }

    private static (int First, int Count) SeedRange()
    {
        var single = Environment.GetEnvironmentVariable("DSE_WORKFLOW_SEED");
        if (!string.IsNullOrEmpty(single))
        {
            return (int.Parse(single, CultureInfo.InvariantCulture), 1);
        }

        var seeds = Environment.GetEnvironmentVariable("DSE_WORKFLOW_SEEDS");
        return (1, string.IsNullOrEmpty(seeds) ? DefaultSeeds : int.Parse(seeds, CultureInfo.InvariantCulture));
    }

    private sealed class Stats
    {
        public int HostCrashes { get; set; }

        public int ServiceCrashes { get; set; }

        public int ReissuedSteps { get; set; }

        public int Reloads { get; set; }

        public override string ToString() =>
            $"host crashes {HostCrashes}, service crashes {ServiceCrashes}, steps re-issued {ReissuedSteps}, reloads after rollbacks {Reloads}";
    }
}
