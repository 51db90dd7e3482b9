using Dse.Testing;

namespace Dse.Benchmarks.Tests;

/// <summary>
/// Runs the benchmark harness (benchmarks/Dse.Benchmarks, its own build output next to this test build's configuration)
/// with <c>dotnet</c> as a separate process and collects what it printed. A run that outlasts the timeout is killed,
/// with its whole process tree, and reported as such.
/// </summary>
internal static class BenchmarkHarness
{
    /// <summary>The longest a single scenario may take in <c>--quick</c> mode before the run counts as hung.</summary>
    public static readonly TimeSpan Timeout = TimeSpan.FromMinutes(3);

    /// <summary>Runs the harness with <paramref name="arguments"/> and extra environment variables.</summary>
    public static Task<ProgramRun> RunAsync(IReadOnlyDictionary<string, string>? environment, params string[] arguments)
    {
        // The harness's own variables come only from the test.
        var variables = new Dictionary<string, string?> { ["DSE_BENCH_RESULTS"] = null, ["DSE_BENCH_SELF_TEST"] = null };
        foreach (var (name, value) in environment ?? new Dictionary<string, string>())
        {
            variables[name] = value;
        }

        return BuiltProgram.RunAsync("benchmarks/Dse.Benchmarks", "Dse.Benchmarks.dll", arguments, Timeout, variables);
    }
}
