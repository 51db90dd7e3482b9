namespace Dse.Testing;

/// <summary>What one run of a built program (<see cref="BuiltProgram.RunAsync"/>) printed, and how it ended.</summary>
/// <param name="ExitCode">The process's exit code (meaningless when <paramref name="TimedOut"/>).</param>
/// <param name="StandardOutput">Everything on stdout.</param>
/// <param name="StandardError">Everything on stderr.</param>
/// <param name="TimedOut">Whether the run was killed, with its process tree, for outlasting its timeout.</param>
/// <param name="Elapsed">Wall-clock time of the run.</param>
public sealed record ProgramRun(int ExitCode, string StandardOutput, string StandardError, bool TimedOut, TimeSpan Elapsed)
{
    /// <summary>The non-empty lines of stdout.</summary>
    public IReadOnlyList<string> OutputLines => StandardOutput.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);

    /// <summary>The non-empty lines of stderr.</summary>
    public IReadOnlyList<string> ErrorLines => StandardError.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);

    /// <summary>Everything the run printed, for a failure message.</summary>
    public string Describe() =>
        $"exit code {ExitCode}{(TimedOut ? " (killed: timed out)" : string.Empty)} after {Elapsed.TotalSeconds:F1} s\n--- stdout ---\n{StandardOutput}\n--- stderr ---\n{StandardError}";
}
