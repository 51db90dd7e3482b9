using System.Net;
using System.Text.Json;
using Dse.Coordinator.Tests.Infrastructure;
using Grpc.Health.V1;

namespace Dse.Coordinator.Tests;

/// <summary>
/// The coordinator's health as probes see it: grpc.health.v1 (SERVING unless stopped) and /healthz over HTTP/2 on the
/// gRPC port (Healthy, Degraded while recovering, Unhealthy once the journal failed).
/// </summary>
public sealed class CoordinatorHealthTests
{
    [Fact]
    public async Task Health_Serving_HealthyAndServing()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));

        var (status, body) = await HealthzAsync(server);

        Assert.Equal(HttpStatusCode.OK, status);
        Assert.Equal("Healthy", body.GetProperty("status").GetString());
        Assert.Equal(server.Coordinator.Incarnation, body.GetProperty("incarnation").GetInt64());
        Assert.False(body.GetProperty("isRecovering").GetBoolean());
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, await GrpcHealthAsync(server, string.Empty));
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, await GrpcHealthAsync(server, RawCalls.Service));
    }

    [Fact]
    public async Task Health_RecoveringFromItsRestart_DegradedButServing_HealthyOnceAnswered()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using (var first = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store)))
        {
            await first.CreateClient().ConnectAsync(new ConnectRequest(1, []));
        }

        await using var server = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));

        var (status, body) = await HealthzAsync(server);
        Assert.Equal(HttpStatusCode.OK, status);
        Assert.Equal("Degraded", body.GetProperty("status").GetString());
        Assert.True(body.GetProperty("isRecovering").GetBoolean());
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, await GrpcHealthAsync(server, RawCalls.Service));

        await server.CreateClient().ResyncAsync(new ResyncRequest(1, 0, [], new Dictionary<long, long>()));
        Assert.Equal("Healthy", (await HealthzAsync(server)).Body.GetProperty("status").GetString());
    }

    [Fact]
    public async Task Health_JournalFailed_UnhealthyAndNotServing()
    {
        var log = new FaultyCoordinatorLog(new InMemoryCoordinatorLogStore());
        await using var server = await CoordinatorTestServer.StartAsync(() => log);
        log.FailAppends = true;
        await Assert.ThrowsAsync<DseCoordinatorException>(() => server.CreateClient().ConnectAsync(new ConnectRequest(1, [])).AsTask());

        var (status, body) = await HealthzAsync(server);

        Assert.Equal(HttpStatusCode.ServiceUnavailable, status);
        Assert.Equal("Unhealthy", body.GetProperty("status").GetString());
        Assert.Contains("Injected append failure", body.GetProperty("description").GetString(), StringComparison.Ordinal);
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.NotServing, await GrpcHealthAsync(server, string.Empty));
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.NotServing, await GrpcHealthAsync(server, RawCalls.Service));
    }

    private static async Task<(HttpStatusCode Status, JsonElement Body)> HealthzAsync(CoordinatorTestServer server)
    {
        using var response = await server.CreateHttpClient().GetAsync(new Uri("/healthz", UriKind.Relative));
        Assert.Equal(HttpVersion.Version20, response.Version);
        using var json = JsonDocument.Parse(await response.Content.ReadAsStringAsync());
        return (response.StatusCode, json.RootElement.Clone());
    }

    private static async Task<HealthCheckResponse.Types.ServingStatus> GrpcHealthAsync(CoordinatorTestServer server, string service) =>
        (await new Health.HealthClient(server.Channel).CheckAsync(new HealthCheckRequest { Service = service })).Status;
}
