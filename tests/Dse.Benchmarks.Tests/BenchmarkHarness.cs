using System.Diagnostics;
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
    public static async Task<HarnessRun> RunAsync(IReadOnlyDictionary<string, string>? environment, params string[] arguments)
    {
        var start = new ProcessStartInfo(BuiltProgram.DotnetMuxer())
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(BuiltProgram.Locate("benchmarks/Dse.Benchmarks", "Dse.Benchmarks.dll"));
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        // The harness's own variables come only from the test.
        start.Environment.Remove("DSE_BENCH_RESULTS");
        start.Environment.Remove("DSE_BENCH_SELF_TEST");
        foreach (var (name, value) in environment ?? new Dictionary<string, string>())
        {
            start.Environment[name] = value;
        }

        using var process = Process.Start(start) ?? throw new InvalidOperationException("Could not start the benchmark harness.");
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        var watch = Stopwatch.StartNew();
        using var timeout = new CancellationTokenSource(Timeout);
        bool timedOut = false;
        try
        {
            await process.WaitForExitAsync(timeout.Token);
        }
        catch (OperationCanceledException) when (timeout.IsCancellationRequested)
        {
            timedOut = true;
            process.Kill(entireProcessTree: true);
            await process.WaitForExitAsync();
        }

        return new HarnessRun(process.ExitCode, await stdout, await stderr, timedOut, watch.Elapsed);
    }
}
