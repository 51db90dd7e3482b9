using System.Diagnostics;
using System.Text.RegularExpressions;
using Xunit.Abstractions;
using Dse.Testing;

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
        var start = new ProcessStartInfo(BuiltProgram.DotnetMuxer())
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add("exec");
        start.ArgumentList.Add(BuiltProgram.Locate("samples/HelloDse", "HelloDse.dll"));
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        using var process = Process.Start(start) ?? throw new InvalidOperationException("Could not start the HelloDse sample.");
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        try
        {
            await process.WaitForExitAsync().WaitAsync(RunTimeout);
        }
        catch (TimeoutException)
        {
            process.Kill(entireProcessTree: true);
            throw;
        }

        string printed = await stdout;
        output.WriteLine($"$ HelloDse {string.Join(' ', arguments)}  (exit code {process.ExitCode})");
        output.WriteLine(printed);
        output.WriteLine(await stderr);
        return (process.ExitCode, printed);
    }

    [GeneratedRegex(@"^(Hello, .+!.*\.) \([0-9.]+ ms\)\r?$", RegexOptions.Multiline)]
    private static partial Regex Greeting();

    [GeneratedRegex(@"Greet\(\w+\): Visits answered from version \d+, [^\r\n]*", RegexOptions.None)]
    private static partial Regex GreetChecks();

    [GeneratedRegex(@"Versions persisted \(meter Dse, dse.versions.persisted\): (\d+)")]
    private static partial Regex VersionsPersisted();
}
