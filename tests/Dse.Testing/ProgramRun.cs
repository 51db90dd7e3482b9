namespace Dse.Benchmarks.Tests;

/// <summary>What one run of the benchmark harness printed, and how it ended.</summary>
/// <param name="ExitCode">The process's exit code (meaningless when <paramref name="TimedOut"/>).</param>
/// <param name="StandardOutput">Everything on stdout: the RESULT line and nothing else.</param>
/// <param name="StandardError">Progress and diagnostics.</param>
/// <param name="TimedOut">Whether the run was killed for outlasting <see cref="BenchmarkHarness.Timeout"/>.</param>
/// <param name="Elapsed">Wall-clock time of the run.</param>
internal sealed record HarnessRun(int ExitCode, string StandardOutput, string StandardError, bool TimedOut, TimeSpan Elapsed)
{
    /// <summary>The non-empty lines of stdout.</summary>
    public IReadOnlyList<string> OutputLines => StandardOutput.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);

    /// <summary>The non-empty lines of stderr.</summary>
    public IReadOnlyList<string> ErrorLines => StandardError.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);

    /// <summary>Everything the run printed, for a failure message.</summary>
    public string Describe() =>
        $"exit code {ExitCode}{(TimedOut ? " (killed: timed out)" : string.Empty)} after {Elapsed.TotalSeconds:F1} s\n--- stdout ---\n{StandardOutput}\n--- stderr ---\n{StandardError}";
}
