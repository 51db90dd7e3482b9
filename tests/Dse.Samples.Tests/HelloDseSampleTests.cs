using System.Text.RegularExpressions;
using Dse.Testing;
using Xunit.Abstractions;

namespace Dse.Samples.Tests;

/// <summary>
/// The getting-started sample (samples/HelloDse) as a user runs it: its built program in a process of its own, on a
/// data directory of the test's, checked by what it prints.
/// </summary>
public partial class HelloDseSampleTests(ITestOutputHelper output) : IDisposable
{
    // Generous: the sample takes a few seconds; this only bounds a hang.
    private static readonly TimeSpan RunTimeout = TimeSpan.FromSeconds(90);

    private readonly DirectoryInfo _data = Directory.CreateTempSubdirectory("dse-hello-test-");

    [Fact]
    public async Task Run_FreshDataDirectory_GreetsEachNameWithItsCountAndReportsWhatItPersisted()
    {
        var (exitCode, stdout) = await RunAsync("Ada", "Grace", "Ada", "--data-dir", _data.FullName);

        Assert.Equal(0, exitCode);
        Assert.Contains("HelloDse: speculative, coordinator embedded", stdout, StringComparison.Ordinal);
        Assert.Equal(["Hello, Ada! Visit number 1.", "Hello, Grace! Visit number 1.", "Hello, Ada! Visit number 2."], Greetings(stdout));

        // Both hosts connected their StateObject (hosting event 5001), and the Greeter logged its check of each answer.
        Assert.Contains("StateObject 1 connected to coordinator in-process", stdout, StringComparison.Ordinal);
        Assert.Contains("StateObject 2 connected to coordinator in-process", stdout, StringComparison.Ordinal);
        Assert.Equal(3, GreetChecks().Matches(stdout).Count);

        // Each reply waited at a barrier, so each service persisted (and the coordinator committed) at least one version.
        var persisted = VersionsPersisted().Match(stdout);
        Assert.True(persisted.Success, "the sample did not print the dse.versions.persisted line");
        Assert.True(long.Parse(persisted.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture) >= 2, persisted.Value);
    }

    [Fact]
    public async Task Run_AgainWithoutSpeculation_CountsContinueAndVisitsAnswersOnlyCommittedState()
    {
        var (firstExit, _) = await RunAsync("Ada", "--data-dir", _data.FullName);
        Assert.Equal(0, firstExit);

        var (exitCode, stdout) = await RunAsync("Ada", "Ada", "--data-dir", _data.FullName, "--no-speculation");

        Assert.Equal(0, exitCode);
        Assert.Contains("HelloDse: non-speculative", stdout, StringComparison.Ordinal);
        Assert.Equal(["Hello, Ada! Visit number 2.", "Hello, Ada! Visit number 3."], Greetings(stdout));

        // The baseline releases Visits' answer only after a barrier: the Greeter never holds an uncommitted one.
        var checks = GreetChecks().Matches(stdout);
        Assert.Equal(2, checks.Count);
        Assert.All(checks, check => Assert.Contains("already committed", check.Value, StringComparison.Ordinal));
    }

    public void Dispose()
    {
        _data.Delete(recursive: true);
        GC.SuppressFinalize(this);
    }

    private static List<string> Greetings(string stdout)
    {
        var greetings = new List<string>();
        foreach (Match match in Greeting().Matches(stdout))
        {
            greetings.Add(match.Groups[1].Value);
        }

        return greetings;
    }

    /// <summary>Runs the built sample with <paramref name="arguments"/>; returns its exit code and everything it printed.</summary>
    private async Task<(int ExitCode, string Output)> RunAsync(params string[] arguments)
    {
        var run = await BuiltProgram.RunAsync("samples/HelloDse", "HelloDse.dll", arguments, RunTimeout);
        output.WriteLine($"$ HelloDse {string.Join(' ', arguments)}  (exit code {run.ExitCode}{(run.TimedOut ? ", killed: timed out" : string.Empty)})");
        output.WriteLine(run.StandardOutput);
        output.WriteLine(run.StandardError);
        return run.TimedOut ? throw new TimeoutException($"HelloDse {string.Join(' ', arguments)} ran longer than {RunTimeout}.") : (run.ExitCode, run.StandardOutput);
    }

    [GeneratedRegex(@"^(Hello, .+!.*\.) \([0-9.]+ ms\)\r?$", RegexOptions.Multiline)]
    private static partial Regex Greeting();

    [GeneratedRegex(@"Greet\(\w+\): Visits answered from version \d+, [^\r\n]*", RegexOptions.None)]
    private static partial Regex GreetChecks();

    [GeneratedRegex(@"Versions persisted \(meter Dse, dse.versions.persisted\): (\d+)")]
    private static partial Regex VersionsPersisted();
}
