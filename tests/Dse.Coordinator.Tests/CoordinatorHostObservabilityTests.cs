using System.Net;
using System.Text.RegularExpressions;
using Dse.Coordinator.Client;
using Dse.Coordinator.Tests.Infrastructure;

namespace Dse.Coordinator.Tests;

/// <summary>The coordinator host's Prometheus endpoint, scraped from its own process over HTTP/1.1 on <c>--health-port</c>.</summary>
[Trait("Category", "MultiProcess")]
public sealed partial class CoordinatorHostObservabilityTests : IAsyncLifetime
{
    private readonly FileLogHarness _log = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _log.DisposeAsync();

    [Fact]
    public async Task Metrics_AfterAReport_CountsItOnTheHealthPort()
    {
        await using var host = HostProcess.Start("--port", "0", "--health-port", "0", "--log", $"file:{_log.Path}");
        var address = new Uri(ListeningLine().Match(await host.ReadLineAsync()).Groups["address"].Value);
        var health = HealthLine().Match(await host.ReadLineAsync());
        Assert.True(health.Success, "With --health-port the second line announces /healthz.");

        using (var client = new GrpcCoordinatorClient(address))
        {
            await client.ConnectAsync(new ConnectRequest(1, []));
            Assert.Equal(ReportOutcome.Accepted, await client.ReportPersistedAsync(1, new VersionReport(1, 0, [])));
        }

        using var http = new HttpClient();
        var metrics = new Uri(new Uri(health.Groups["address"].Value), "/metrics");
        using var response = await http.GetAsync(metrics);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        string text = await response.Content.ReadAsStringAsync();
        var reports = ReportsCounter().Match(text);
        Assert.True(reports.Success, $"no dse_coordinator_reports_total in the scrape:\n{text}");
        Assert.True(double.Parse(reports.Groups["value"].Value, System.Globalization.CultureInfo.InvariantCulture) >= 1);
    }

    [GeneratedRegex(@"^DSE coordinator listening on (?<address>http://127\.0\.0\.1:[0-9]+)$")]
    private static partial Regex ListeningLine();

    [GeneratedRegex(@"^DSE coordinator health on (?<address>http://127\.0\.0\.1:[0-9]+/healthz)$")]
    private static partial Regex HealthLine();

    [GeneratedRegex(@"^dse_coordinator_reports_total(\{[^}]*\})? (?<value>[0-9.eE+]+)", RegexOptions.Multiline)]
    private static partial Regex ReportsCounter();
}
