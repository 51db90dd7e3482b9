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

    [Fact]
    public async Task Remove_RunningHost_RemovesOnceThenReportsRemovedAlready()
    {
        await using var host = HostProcess.Start("--port", "0", "--log", $"file:{_log.Path}");
        var address = new Uri(ListeningLine().Match(await host.ReadLineAsync()).Groups["address"].Value);
        using (var client = new GrpcCoordinatorClient(address))
        {
            await client.ConnectAsync(new ConnectRequest(1, []));
            await client.ConnectAsync(new ConnectRequest(2, []));
        }

        await using (var removed = HostProcess.Start("remove", "--coordinator", address.ToString(), "--id", "2"))
        {
            Assert.Equal(0, await removed.WaitForExitAsync());
            Assert.StartsWith("Participant 2 removed from the cluster", await removed.ReadLineAsync(), StringComparison.Ordinal);
        }

        await using (var again = HostProcess.Start("remove", "--coordinator", address.ToString(), "--id", "2"))
        {
            Assert.Equal(1, await again.WaitForExitAsync());
            Assert.StartsWith("Participant 2 was removed already", await again.ReadLineAsync(), StringComparison.Ordinal);
        }

        await using (var unknown = HostProcess.Start("remove", "--coordinator", address.ToString(), "--id", "9"))
        {
            Assert.Equal(4, await unknown.WaitForExitAsync());
            Assert.Contains("UnknownParticipant", await unknown.StandardErrorAsync(), StringComparison.Ordinal);
        }

        using (var client = new GrpcCoordinatorClient(address))
        {
            var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.HeartbeatAsync(2).AsTask());
            Assert.Equal(CoordinatorErrorCode.Removed, error.Code);
        }
    }

    [Fact]
    public async Task Remove_NothingListening_ExitCode4()
    {
        using var crashed = RawTcpServer.Resetting();
        await using var remove = HostProcess.Start("remove", "--coordinator", crashed.Address.ToString(), "--id", "1");

        Assert.Equal(4, await remove.WaitForExitAsync());
        Assert.Contains("unreachable", await remove.StandardErrorAsync(), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("remove --id 1", "--coordinator is required")]
    [InlineData("remove --coordinator http://127.0.0.1:1 --id -1", "--id must be a participant id")]
    [InlineData("remove --coordinator ftp://x --id 1", "--coordinator must be an http or https URL")]
    public async Task Remove_BadArguments_ExitCode2NamingTheArgument(string arguments, string message)
    {
        await using var remove = HostProcess.Start(arguments.Split(' '));

        Assert.Equal(2, await remove.WaitForExitAsync());
        Assert.Contains(message, await remove.StandardErrorAsync(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Host_StrayConnectionString_NotEchoed()
    {
        const string Secret = "c2VjcmV0LWtleQ==";
        await using var host = HostProcess.Start("--port", "0", "--log", "file:x", $"DefaultEndpointsProtocol=https;AccountName=a;AccountKey={Secret}");

        Assert.Equal(2, await host.WaitForExitAsync());
        string error = await host.StandardErrorAsync();
        Assert.Contains("not shown: it may contain a secret", error, StringComparison.Ordinal);
        Assert.DoesNotContain(Secret, error, StringComparison.Ordinal);
        Assert.DoesNotContain("AccountKey", error, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("--port abc --log file:x", "--port must be a whole number")]
    [InlineData("--port 0", "--log is required")]
    [InlineData("--port 0 --log disk:x", "--log must be file:PATH or blob:CONTAINER/BLOBNAME")]
    [InlineData("--port 0 --log blob:container/blob", "needs a connection string")]
    [InlineData("--port 0 --log file:x --heartbeat-timeout 5ms", "--heartbeat-timeout")]
    [InlineData("--port 0 --log file:x --frobnicate 1", "Unknown option '--frobnicate'")]
    [InlineData("--port 0 --log file:x --max-message-size 12XB", "--max-message-size must be a size")]
    [InlineData("--port 0 --log file:x --max-message-size 100", "--max-message-size: ")]
    [InlineData("--port 0 --log file:x --exit-on-fault maybe", "--exit-on-fault must be on or off")]
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
