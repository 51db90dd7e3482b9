using System.Net;
using System.Text.RegularExpressions;
using Dse.Coordinator.Client;
using Dse.Coordinator.Tests.Infrastructure;
using Grpc.Health.V1;
using Grpc.Net.Client;

namespace Dse.Coordinator.Tests;

/// <summary>
/// The real host executable (Dse.Coordinator.Host) in its own process over a file log: the listening line, a call,
/// health, fencing against a second host, and argument errors. Waits on the host's output, never on time.
/// </summary>
[Trait("Category", "MultiProcess")]
public sealed partial class CoordinatorHostProcessTests : IAsyncLifetime
{
    private readonly FileLogHarness _log = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _log.DisposeAsync();

    [Fact]
    public async Task Host_FileLog_AnnouncesItsAddressServesAndFencesASecondHost()
    {
        await using var host = HostProcess.Start("--port", "0", "--health-port", "0", "--log", $"file:{_log.Path}");

        var listening = ListeningLine().Match(await host.ReadLineAsync());
        Assert.True(listening.Success, "The first line announces the gRPC address.");
        var health = HealthLine().Match(await host.ReadLineAsync());
        Assert.True(health.Success, "With --health-port the second line announces /healthz.");
        var address = new Uri(listening.Groups["address"].Value);

        using (var client = new GrpcCoordinatorClient(address))
        {
            var connected = await client.ConnectAsync(new ConnectRequest(1, []));
            Assert.Equal(1, connected.State.Incarnation);
            Assert.Equal(ReportOutcome.Accepted, await client.ReportPersistedAsync(1, new VersionReport(1, 0, [])));
        }

        using (var channel = GrpcChannel.ForAddress(address))
        {
            var serving = await new Health.HealthClient(channel).CheckAsync(new HealthCheckRequest());
            Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, serving.Status);
        }

        using (var http = new HttpClient())
        {
            using var response = await http.GetAsync(new Uri(health.Groups["address"].Value));
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Contains("\"status\":\"Healthy\"", await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        }

        // The file is locked by the running host: a second one refuses to start.
        await using (var second = HostProcess.Start("--port", "0", "--log", $"file:{_log.Path}"))
        {
            Assert.Equal(3, await second.WaitForExitAsync());
            Assert.Contains("is held by another coordinator", await second.StandardErrorAsync(), StringComparison.Ordinal);
        }
    }

    [Theory]
    [InlineData("--port abc --log file:x", "--port must be a whole number")]
    [InlineData("--port 0", "--log is required")]
    [InlineData("--port 0 --log disk:x", "--log must be file:PATH or blob:CONTAINER/BLOBNAME")]
    [InlineData("--port 0 --log blob:container/blob", "needs a connection string")]
    [InlineData("--port 0 --log file:x --heartbeat-timeout 5ms", "--heartbeat-timeout")]
    [InlineData("--port 0 --log file:x --frobnicate 1", "Unknown option '--frobnicate'")]
    public async Task Host_BadArguments_ExitCode2NamingTheArgument(string arguments, string message)
    {
        await using var host = HostProcess.Start(arguments.Split(' '));

        Assert.Equal(2, await host.WaitForExitAsync());
        string error = await host.StandardErrorAsync();
        Assert.Contains(message, error, StringComparison.Ordinal);
        Assert.Contains("Usage:", error, StringComparison.Ordinal);
    }

    [GeneratedRegex(@"^DSE coordinator listening on (?<address>http://127\.0\.0\.1:[0-9]+)$")]
    private static partial Regex ListeningLine();

    [GeneratedRegex(@"^DSE coordinator health on (?<address>http://127\.0\.0\.1:[0-9]+/healthz)$")]
    private static partial Regex HealthLine();
}
