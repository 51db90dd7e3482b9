using System.Diagnostics;
using System.Globalization;
using Xunit.Abstractions;
using Xunit.Sdk;

namespace Dse.Fuzz.Tests;

/// <summary>
/// The budget and seed of one fuzz target, from the environment: a fixed number of inputs with a fixed seed by default
/// (a short, deterministic run for CI); <c>DSE_FUZZ_SECONDS</c> turns that into a time budget per target with a fresh
/// seed, <c>DSE_FUZZ_INPUTS</c> sets the number of inputs, <c>DSE_FUZZ_SEED</c> the seed. Input <c>i</c> of a run with
/// seed <c>s</c> is generated from seed <c>s + i</c> alone, so one input replays with <c>DSE_FUZZ_SEED=s+i DSE_FUZZ_INPUTS=1</c>.
/// </summary>
internal sealed class FuzzRun
{
    public const string SecondsVariable = "DSE_FUZZ_SECONDS";
    public const string InputsVariable = "DSE_FUZZ_INPUTS";
    public const string SeedVariable = "DSE_FUZZ_SEED";

    private readonly ITestOutputHelper _output;
    private readonly Stopwatch _clock = Stopwatch.StartNew();

    /// <summary>How many inputs ended each way (accepted, refused, ...), printed at the end to show what the inputs reached.</summary>
    private readonly SortedDictionary<string, long> _outcomes = new(StringComparer.Ordinal);

    private FuzzRun(string target, ITestOutputHelper output, int seed, long maxInputs, TimeSpan? budget)
    {
        Target = target;
        _output = output;
        Seed = seed;
        MaxInputs = maxInputs;
        Budget = budget;
    }

    /// <summary>The test's name, for the replay command.</summary>
    public string Target { get; }

    /// <summary>The seed of input 0.</summary>
    public int Seed { get; }

    /// <summary>Inputs to run at most (unbounded under a time budget unless <c>DSE_FUZZ_INPUTS</c> is set).</summary>
    public long MaxInputs { get; }

    /// <summary>The time budget, when <c>DSE_FUZZ_SECONDS</c> is set.</summary>
    public TimeSpan? Budget { get; }

    /// <summary>The slowest input so far: its seed and how long it took.</summary>
    public (int Seed, TimeSpan Elapsed) Slowest { get; private set; }

    /// <summary>Inputs run so far.</summary>
    public long Inputs { get; private set; }

    /// <summary>The settings for a target whose default run is <paramref name="defaultInputs"/> inputs.</summary>
    public static FuzzRun Start(string target, ITestOutputHelper output, int defaultInputs)
    {
        TimeSpan? budget = null;
        long maxInputs = defaultInputs;
        string? seconds = Environment.GetEnvironmentVariable(SecondsVariable);
        if (!string.IsNullOrEmpty(seconds))
        {
            budget = TimeSpan.FromSeconds(double.Parse(seconds, CultureInfo.InvariantCulture));
            maxInputs = long.MaxValue;
        }

        string? inputs = Environment.GetEnvironmentVariable(InputsVariable);
        if (!string.IsNullOrEmpty(inputs))
        {
            maxInputs = long.Parse(inputs, CultureInfo.InvariantCulture);
        }

        string? seedText = Environment.GetEnvironmentVariable(SeedVariable);
        int seed = !string.IsNullOrEmpty(seedText)
            ? int.Parse(seedText, CultureInfo.InvariantCulture)
            : budget is null ? StableSeed(target) : Random.Shared.Next();
        output.WriteLine($"{target}: seed {seed}, {(budget is { } b ? $"{b.TotalSeconds:0} s" : $"{maxInputs} inputs")}");
        return new FuzzRun(target, output, seed, maxInputs, budget);
    }

    /// <summary>Whether another input fits the budget.</summary>
    public bool Continue => Inputs < MaxInputs && (Budget is not { } budget || _clock.Elapsed < budget);

    /// <summary>
    /// Runs <paramref name="input"/> for each input of the budget with its own seeded random source; the first failure
    /// ends the run with the input's seed and the command that replays it: that input alone, or with
    /// <paramref name="stateful"/> (inputs to one long-lived server) the run up to it.
    /// </summary>
    public async Task RunAsync(Func<int, Random, Task> input, bool stateful = false)
    {
        while (Continue)
        {
            int seed = unchecked(Seed + (int)Inputs);
            long started = Stopwatch.GetTimestamp();
            try
            {
                await input(seed, new Random(seed));
            }
            catch (Exception e)
            {
                throw new XunitException($"{Target}: input {Inputs} (seed {seed}) failed: {e}\n{(stateful ? ReplayHint(Seed, Inputs + 1) : ReplayHint(seed))}");
            }

            var elapsed = Stopwatch.GetElapsedTime(started);
            if (elapsed > Slowest.Elapsed)
            {
                Slowest = (seed, elapsed);
            }

            Inputs++;
        }

        Finish();
    }

    /// <summary>The command that replays <paramref name="inputs"/> inputs from <paramref name="seed"/> on.</summary>
    public string ReplayHint(int seed, long inputs = 1) =>
        $"Replay: {SeedVariable}={seed} {InputsVariable}={inputs} dotnet test tests/Dse.Fuzz.Tests -c Release --filter \"FullyQualifiedName~{Target}\"";

    /// <summary>Counts an input that ended as <paramref name="outcome"/>.</summary>
    public void Tally(string outcome)
    {
        lock (_outcomes)
        {
            _outcomes[outcome] = _outcomes.GetValueOrDefault(outcome) + 1;
        }
    }

    /// <summary>Prints how many inputs the target ran, and how they ended.</summary>
    public void Finish()
    {
        string outcomes;
        lock (_outcomes)
        {
            outcomes = string.Join(", ", _outcomes.Select(o => $"{o.Key} {o.Value}"));
        }

        _output.WriteLine($"{Target}: {Inputs} inputs in {_clock.Elapsed.TotalSeconds:0.0} s (seed {Seed}){(outcomes.Length > 0 ? $": {outcomes}" : "")}");
        if (Slowest.Elapsed > TimeSpan.Zero)
        {
            _output.WriteLine($"{Target}: slowest input {Slowest.Elapsed.TotalMilliseconds:0} ms (seed {Slowest.Seed})");
        }
    }

    /// <summary>A seed that depends on the target's name only (not on string hashing, which .NET randomizes per process).</summary>
    private static int StableSeed(string target)
    {
        uint hash = 2166136261;
        foreach (char c in target)
        {
            hash = (hash ^ c) * 16777619;
        }

        return (int)(hash & 0x7FFF_FFFF);
    }
}
