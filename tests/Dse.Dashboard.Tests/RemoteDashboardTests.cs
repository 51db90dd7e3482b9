using System.Net;
using System.Text.Json;
using Dse.Coordinator;
using Dse.Coordinator.Client;
using Dse.Coordinator.Dashboard;
using Dse.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Dashboard.Tests;

/// <summary>
/// The dashboard mounted in an app that is not the coordinator (<see cref="DseDashboardOptions.RemoteCoordinator"/>):
/// it shows the remote coordinator's view through its Inspect RPC, refuses removals, and says so when the coordinator
/// cannot be read.
/// </summary>
public sealed class RemoteDashboardTests
{
    [Fact]
    public async Task Snapshot_RemoteCoordinator_ShowsItsParticipantsAndStatistics()
    {
        await using var coordinator = await StartCoordinatorAsync();
        using var client = new GrpcCoordinatorClient(coordinator.Address);
        await client.ConnectAsync(new ConnectRequest(1, []));
        await client.ReportPersistedAsync(1, new VersionReport(1, 0, []));
        await client.HeartbeatAsync(1, new ParticipantStatistics(2, 0, new BarrierWaitDistribution([1], [3, 0], 0.9), [new QueueStatistics("orders", 4, 0, 1)]));
        await using var dashboard = await DashboardApp.StartAsync(o => o.RemoteCoordinator = client);

        using var view = JsonDocument.Parse(await dashboard.Http.GetStringAsync("api/snapshot"));

        Assert.Equal(JsonValueKind.Null, view.RootElement.GetProperty("fault").ValueKind);
        Assert.False(view.RootElement.GetProperty("removalAvailable").GetBoolean());
        Assert.True(view.RootElement.GetProperty("remote").GetBoolean());
        var participant = Assert.Single(view.RootElement.GetProperty("participants").EnumerateArray().ToArray());
        Assert.Equal(1, participant.GetProperty("committed").GetInt64());
        var statistics = participant.GetProperty("statistics");
        Assert.Equal(2, statistics.GetProperty("currentVersion").GetInt64());
        Assert.Equal(3, statistics.GetProperty("barrierWaits").GetProperty("total").GetInt64());
        Assert.Equal("orders", statistics.GetProperty("queues")[0].GetProperty("name").GetString());
    }

    [Fact]
    public async Task Remove_RemoteCoordinator_ForbiddenAndNothingRemoved()
    {
        await using var coordinator = await StartCoordinatorAsync();
        using var client = new GrpcCoordinatorClient(coordinator.Address);
        await client.ConnectAsync(new ConnectRequest(1, []));
        await using var dashboard = await DashboardApp.StartAsync(o => o.RemoteCoordinator = client);

        using var response = await dashboard.Http.PostAsync("api/participants/1/remove?confirm=1", null);

        Assert.Equal(HttpStatusCode.Forbidden, response.StatusCode);
        Assert.Contains("coordinator of another process", await response.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        Assert.False(Assert.Single((await client.InspectAsync()).Participants).Removed);
    }

    [Fact]
    public async Task Snapshot_RemoteCoordinatorGone_FaultSaysItCannotBeRead()
    {
        var coordinator = await StartCoordinatorAsync();
        using var client = new GrpcCoordinatorClient(coordinator.Address, new GrpcCoordinatorClientOptions { CallTimeout = TimeSpan.FromSeconds(5) });
        await coordinator.DisposeAsync();
        await using var dashboard = await DashboardApp.StartAsync(o => o.RemoteCoordinator = client);

        using var view = JsonDocument.Parse(await dashboard.Http.GetStringAsync("api/snapshot"));

        Assert.Contains("cannot be read (Unavailable)", view.RootElement.GetProperty("fault").GetString(), StringComparison.Ordinal);
        Assert.Empty(view.RootElement.GetProperty("participants").EnumerateArray());
    }

    [Fact]
    public void Options_RemoteWithLocalCoordinatorOrCredentials_Refused()
    {
        using var client = new GrpcCoordinatorClient(new Uri("http://127.0.0.1:1"));
        var withLocal = new DseDashboardOptions { RemoteCoordinator = client, Coordinator = new ClusterCoordinator() };
        Assert.Contains("excludes Coordinator and Credentials", Assert.Throws<ArgumentException>(withLocal.Validate).Message, StringComparison.Ordinal);
    }

    private static Task<LoopbackGrpcServer> StartCoordinatorAsync()
    {
        var store = new InMemoryCoordinatorLogStore();
        return LoopbackGrpcServer.StartAsync(
            app => app.MapDseCoordinator(),
            services => services.AddDseCoordinator(_ => new InMemoryCoordinatorLog(store), o => o.HeartbeatTimeout = null));
    }

    /// <summary>A web app that is no coordinator and mounts the dashboard (<see cref="DashboardServer.StartAppAsync"/>).</summary>
    private sealed class DashboardApp : IAsyncDisposable
    {
        private readonly WebApplication _app;

        private DashboardApp(WebApplication app)
        {
            _app = app;
            Http = new HttpClient { BaseAddress = DashboardServer.DashboardOf(app), Timeout = TimeSpan.FromSeconds(30) };
        }

        public HttpClient Http { get; }

        public static async Task<DashboardApp> StartAsync(Action<DseDashboardOptions> configure) =>
            new(await DashboardServer.StartAppAsync(configure));

        public async ValueTask DisposeAsync()
        {
            Http.Dispose();
            await _app.StopAsync();
            await _app.DisposeAsync();
        }
    }
}
