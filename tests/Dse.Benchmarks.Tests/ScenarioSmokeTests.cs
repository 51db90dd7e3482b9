using System.Text.Json;
using Dse.Benchmarks.Harness;
using Xunit.Abstractions;
using Dse.Testing;

namespace Dse.Benchmarks.Tests;

/// <summary>
/// Every listed benchmark scenario runs in <c>--quick</c> mode, as a process, one after another, so that none of them
/// rots: each must exit 0 with one RESULT line on stdout and write its JSON to the folder it is given (a temporary one,
/// never the committed benchmarks/results). The numbers are never checked: a quick run is a smoke test, not a measurement.
/// </summary>
[Trait("Category", "BenchmarkSmoke")]
public class ScenarioSmokeTests(ITestOutputHelper output)
{
    public static TheoryData<string> ListedScenarios()
    {
        var names = new TheoryData<string>();
        foreach (var scenario in ScenarioRegistry.All)
        {
            names.Add(scenario.Name);
        }

        return names;
    }

    [Theory]
    [MemberData(nameof(ListedScenarios))]
    public async Task QuickRun_ListedScenario_ExitsZeroWithOneResultLineAndItsJson(string scenario)
    {
        string folder = Directory.CreateTempSubdirectory("dse-bench-smoke-").FullName;
        var committed = new FileInfo(Path.Combine(BuiltProgram.RepositoryRoot(), "benchmarks", "results", scenario + ".json"));
        var committedBefore = committed.Exists ? committed.LastWriteTimeUtc : default;
        try
        {
            var run = await BenchmarkHarness.RunAsync(null, scenario, "--quick", "--results-dir", folder);
            output.WriteLine($"{scenario} --quick: {run.Elapsed.TotalSeconds:F1} s");

            Assert.False(run.TimedOut, run.Describe());
            Assert.True(run.ExitCode == 0, run.Describe());
            string line = Assert.Single(run.OutputLines);
            Assert.StartsWith($"RESULT {scenario} ", line, StringComparison.Ordinal);
            Assert.DoesNotContain("status=", line, StringComparison.Ordinal);
            Assert.DoesNotContain("Unhandled exception", run.StandardError, StringComparison.Ordinal);

            using var json = JsonDocument.Parse(await File.ReadAllTextAsync(Path.Combine(folder, scenario + ".json")));
            Assert.Equal(scenario, json.RootElement.GetProperty("scenario").GetString());
            Assert.True(json.RootElement.GetProperty("quick").GetBoolean());
            Assert.NotEmpty(json.RootElement.GetProperty("results").EnumerateObject());

            committed.Refresh();
            Assert.Equal(committedBefore, committed.Exists ? committed.LastWriteTimeUtc : default);
        }
        finally
        {
            Directory.Delete(folder, recursive: true);
        }
    }
}
