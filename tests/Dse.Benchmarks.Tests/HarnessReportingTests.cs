using Dse.Benchmarks.Harness;

namespace Dse.Benchmarks.Tests;

/// <summary>
/// How the harness reports: a scenario that fails ends with a failed RESULT line, a one-line reason and exit code 1
/// rather than a crash dump; the results folder can be moved; <c>list</c> shows every scenario and says what
/// <c>--quick</c> is. Uses the unlisted <see cref="HarnessSelfTestScenario"/>.
/// </summary>
[Trait("Category", "BenchmarkSmoke")]
public class HarnessReportingTests
{
    private static readonly string SelfTest = new HarnessSelfTestScenario().Name;

    [Theory]
    [InlineData("fail")]
    [InlineData("crash")]
    public async Task Run_ScenarioFails_PrintsFailedResultLineAndOneLineReasonAndExitsOne(string mode)
    {
        string folder = Directory.CreateTempSubdirectory("dse-bench-fail-").FullName;
        try
        {
            var run = await BenchmarkHarness.RunAsync(
                new Dictionary<string, string> { [HarnessSelfTestScenario.ModeVariable] = mode }, SelfTest, "--quick", "--results-dir", folder);

            Assert.False(run.TimedOut, run.Describe());
            Assert.True(run.ExitCode == 1, run.Describe());
            string line = Assert.Single(run.OutputLines);
            Assert.StartsWith($"RESULT {SelfTest} status=failed error=\"", line, StringComparison.Ordinal);
            Assert.Contains(HarnessSelfTestScenario.FailureMessage, line, StringComparison.Ordinal);
            string reason = Assert.Single(run.ErrorLines);
            Assert.StartsWith($"{SelfTest}: failed: InvalidOperationException: {HarnessSelfTestScenario.FailureMessage}", reason, StringComparison.Ordinal);
            Assert.Contains("HarnessSelfTestScenario.RunAsync", reason, StringComparison.Ordinal);
            Assert.Empty(Directory.GetFiles(folder));
        }
        finally
        {
            Directory.Delete(folder, recursive: true);
        }
    }

    [Fact]
    public async Task Run_ResultsVariableSet_WritesJsonThereWithQuickNote()
    {
        string folder = Path.Combine(Directory.CreateTempSubdirectory("dse-bench-env-").FullName, "nested");
        try
        {
            var run = await BenchmarkHarness.RunAsync(new Dictionary<string, string> { [ResultWriter.ResultsFolderVariable] = folder }, SelfTest, "--quick");

            Assert.True(run.ExitCode == 0, run.Describe());
            Assert.Equal($"RESULT {SelfTest} ok=1", Assert.Single(run.OutputLines));
            string json = await File.ReadAllTextAsync(Path.Combine(folder, SelfTest + ".json"));
            Assert.Contains("\"quick\": true", json, StringComparison.Ordinal);
            Assert.Contains(ResultWriter.QuickNote, json, StringComparison.Ordinal);
        }
        finally
        {
            Directory.Delete(Path.GetDirectoryName(folder)!, recursive: true);
        }
    }

    [Fact]
    public async Task List_Always_ShowsEveryListedScenarioAndSaysQuickIsASmokeTest()
    {
        var run = await BenchmarkHarness.RunAsync(null, "list");

        Assert.True(run.ExitCode == 0, run.Describe());
        Assert.Contains("smoke test", run.OutputLines[0], StringComparison.Ordinal);
        var names = run.OutputLines.Skip(1).Select(l => l.Split(' ', 2)[0]).ToList();
        Assert.Equal(ScenarioRegistry.All.Select(s => s.Name), names);
        Assert.DoesNotContain(SelfTest, names);
    }
}
