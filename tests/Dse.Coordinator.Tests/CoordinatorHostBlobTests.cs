using System.Net;
using System.Text.Json;
using System.Text.RegularExpressions;
using Dse.Coordinator.Client;
using Dse.Coordinator.Tests.Infrastructure;
using Dse.Testing;

namespace Dse.Coordinator.Tests;

/// <summary>
/// The host executable over an Azure append blob (Azurite): a second host takes the log over, the first one's next
/// cluster change is fenced, and it exits with code 5 (or, with <c>--exit-on-fault off</c>, stays up reporting
/// Unhealthy) while the newcomer recovers the cluster.
/// </summary>
[Collection(AzuriteCollection.Name)]
[Trait("Category", "Azure")]
[Trait("Category", "MultiProcess")]
public sealed partial class CoordinatorHostBlobTests(AzuriteFixture azurite)
{
    [Fact]
    public async Task Host_BlobLogTakenOverBySecondHost_FirstIsFencedAndUnhealthy_SecondRecovers()
    {
        var environment = new Dictionary<string, string> { ["DSE_BLOB_CONNECTION_STRING"] = azurite.ConnectionString };
        string log = $"blob:host-{Guid.NewGuid():N}/coordinator.log";

        await using var first = HostProcess.Start(environment, "--port", "0", "--log", log, "--exit-on-fault", "off");
        var firstAddress = await AddressAsync(first);
        using var firstClient = new GrpcCoordinatorClient(firstAddress);
        await firstClient.ConnectAsync(new ConnectRequest(1, []));

        // The blob log lets the newcomer break the lease: it takes over.
        await using var second = HostProcess.Start(environment, "--port", "0", "--log", log);
        var secondAddress = await AddressAsync(second);

        var fenced = await Assert.ThrowsAsync<DseCoordinatorException>(() => firstClient.ConnectAsync(new ConnectRequest(2, [])).AsTask());
        Assert.Equal(CoordinatorErrorCode.Unavailable, fenced.Code);
        var (status, body) = await HealthzAsync(firstAddress);
        Assert.Equal(HttpStatusCode.ServiceUnavailable, status);
        Assert.Equal("Unhealthy", body.GetProperty("status").GetString());
        Assert.Contains(nameof(CoordinatorLogFencedException), body.GetProperty("description").GetString(), StringComparison.Ordinal);

        using var secondClient = new GrpcCoordinatorClient(secondAddress);
        var recovering = await secondClient.GetStateAsync();
        Assert.True(recovering.IsRecovering);
        Assert.Equal(2, recovering.Incarnation);
        Assert.Equal("Degraded", (await HealthzAsync(secondAddress)).Body.GetProperty("status").GetString());

        var recovered = await secondClient.ResyncAsync(new ResyncRequest(1, 0, [], new Dictionary<long, long>()));
        Assert.False(recovered.IsRecovering);
        Assert.Equal("Healthy", (await HealthzAsync(secondAddress)).Body.GetProperty("status").GetString());
    }

    [Fact]
    public async Task Host_BlobLogTakenOverBySecondHost_FirstExitsWithCode5()
    {
        var environment = new Dictionary<string, string> { ["DSE_BLOB_CONNECTION_STRING"] = azurite.ConnectionString };
        string log = $"blob:host-{Guid.NewGuid():N}/coordinator.log";

        // --exit-on-fault is on by default.
        await using var first = HostProcess.Start(environment, "--port", "0", "--log", log);
        using var firstClient = new GrpcCoordinatorClient(await AddressAsync(first));
        await firstClient.ConnectAsync(new ConnectRequest(1, []));
        await using var second = HostProcess.Start(environment, "--port", "0", "--log", log);
        await AddressAsync(second);

        var fenced = await Assert.ThrowsAsync<DseCoordinatorException>(() => firstClient.ConnectAsync(new ConnectRequest(2, [])).AsTask());

        Assert.Equal(CoordinatorErrorCode.Unavailable, fenced.Code);
        Assert.Equal(5, await first.WaitForExitAsync());
        Assert.Contains("the coordinator stopped serving", await first.StandardErrorAsync(), StringComparison.Ordinal);
    }

    private static async Task<Uri> AddressAsync(HostProcess host)
    {
        var listening = ListeningLine().Match(await host.ReadLineAsync());
        Assert.True(listening.Success, "The first line announces the gRPC address.");
        return new Uri(listening.Groups["address"].Value);
    }

    private static async Task<(HttpStatusCode Status, JsonElement Body)> HealthzAsync(Uri address)
    {
        using var http = new HttpClient { DefaultRequestVersion = HttpVersion.Version20, DefaultVersionPolicy = HttpVersionPolicy.RequestVersionExact };
        using var response = await http.GetAsync(new Uri(address, "/healthz"));
        using var json = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        return (response.StatusCode, json.RootElement.Clone());
    }

    [GeneratedRegex(@"^DSE coordinator listening on (?<address>http://127\.0\.0\.1:[0-9]+)$")]
    private static partial Regex ListeningLine();
}
