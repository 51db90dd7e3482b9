using Dse.Testing;

namespace Dse.Dashboard.Tests;

/// <summary>The coordinator host's <c>--dashboard-port</c> flag: a port shared with another endpoint is a usage error.</summary>
[Trait("Category", "MultiProcess")]
public sealed class DashboardHostArgumentsTests
{
    [Theory]
    [InlineData("--port", "5999", "--dashboard-port", "5999")]
    [InlineData("--port", "0", "--health-port", "5998", "--dashboard-port", "5998")]
    [InlineData("--port", "0", "--dashboard-port", "none")]
    public async Task Host_WithAnUnusableDashboardPort_ExitsWithAUsageError(params string[] ports)
    {
        string log = Path.Combine(Path.GetTempPath(), $"dse-dashboard-args-{Guid.NewGuid():N}.log");
        await using var host = ChildProgram.Start("src/Coordinator/Dse.Coordinator.Host", "Dse.Coordinator.Host.dll", [.. ports, "--log", $"file:{log}"]);
        await host.Completion.WaitAsync(TimeSpan.FromSeconds(60));

        Assert.Equal(2, host.ExitCode);
        Assert.Contains("--dashboard-port", await host.DescribeAsync(), StringComparison.Ordinal);
        Assert.False(File.Exists(log));
    }
}
