using System.Text.Json.Nodes;
using Dse.Testing;

namespace Dse.Cli.Tests;

/// <summary>Runs the built <c>dse</c> tool (src/Tools/Dse.Cli) as a process of its own.</summary>
internal static class DseTool
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(60);

    public static Task<ProgramRun> RunAsync(params string[] arguments) =>
        BuiltProgram.RunAsync("src/Tools/Dse.Cli", "Dse.Cli.dll", arguments, Timeout);

    /// <summary>Runs with <c>--json</c>, asserts success, and parses what it printed.</summary>
    public static async Task<JsonObject> JsonAsync(params string[] arguments)
    {
        var run = await RunAsync([.. arguments, "--json"]);
        Assert.True(run.ExitCode == 0, run.Describe());
        return JsonNode.Parse(run.StandardOutput)!.AsObject();
    }

    /// <summary>Asserts the run failed with <paramref name="exitCode"/>, printing one line on stderr and nothing on stdout; returns the line.</summary>
    public static string AssertOneLineError(ProgramRun run, int exitCode)
    {
        Assert.False(run.TimedOut, run.Describe());
        Assert.True(run.ExitCode == exitCode, run.Describe());
        Assert.True(run.ErrorLines.Count == 1, run.Describe());
        Assert.True(run.StandardOutput.Length == 0, run.Describe());
        Assert.StartsWith("error: ", run.ErrorLines[0], StringComparison.Ordinal);
        return run.ErrorLines[0];
    }
}
