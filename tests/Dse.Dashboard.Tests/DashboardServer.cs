using System.Net;
using Dse.Coordinator.Dashboard;
using Dse.Grpc;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Dashboard.Tests;

/// <summary>
/// An in-process web app on 127.0.0.1 (a free port, HTTP/1.1) that serves the dashboard of an embedded
/// <see cref="ClusterCoordinator"/>; tests drive the coordinator through its API and read the dashboard over HTTP or in
/// a browser. With <see cref="OperatorToken"/>, the coordinator's credentials hold one operator and participant 1.
/// </summary>
internal sealed class DashboardServer : IAsyncDisposable
{
    private readonly WebApplication _app;

    private DashboardServer(WebApplication app, ClusterCoordinator coordinator, string? operatorToken, string? participantToken)
    {
        _app = app;
        Coordinator = coordinator;
        OperatorToken = operatorToken;
        ParticipantToken = participantToken;
        Dashboard = DashboardOf(app);
        Http = new HttpClient { BaseAddress = Dashboard, Timeout = TimeSpan.FromSeconds(30) };
    }

    public ClusterCoordinator Coordinator { get; }

    /// <summary>The dashboard's page, ending with '/'.</summary>
    public Uri Dashboard { get; }

    /// <summary>A client whose base address is <see cref="Dashboard"/>.</summary>
    public HttpClient Http { get; }

    /// <summary>The operator's token, or <c>null</c> without credentials.</summary>
    public string? OperatorToken { get; }

    /// <summary>Participant 1's token, or <c>null</c> without credentials.</summary>
    public string? ParticipantToken { get; }

    public static async Task<DashboardServer> StartAsync(bool withCredentials = false, TimeSpan? refreshPeriod = null)
    {
        string? operatorToken = null;
        string? participantToken = null;
        DseCredentials? credentials = null;
        if (withCredentials)
        {
            operatorToken = DseCredentials.CreateToken();
            participantToken = DseCredentials.CreateToken();
            credentials = DseCredentials.Parse(
                [$"operator ops {DseCredentials.HashToken(operatorToken)}", $"participant 1 {DseCredentials.HashToken(participantToken)}"],
                "test participants");
        }

        var coordinator = new ClusterCoordinator();
        var app = await StartAppAsync(o =>
        {
            o.Coordinator = coordinator;
            o.Credentials = credentials;
            o.RefreshPeriod = refreshPeriod ?? TimeSpan.FromMilliseconds(100);
        });
        return new DashboardServer(app, coordinator, operatorToken, participantToken);
    }

    /// <summary>Starts a web app on 127.0.0.1 (a free port, HTTP/1.1) that mounts the dashboard at /dashboard/ with <paramref name="configure"/>.</summary>
    public static async Task<WebApplication> StartAppAsync(Action<DseDashboardOptions> configure)
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, l => l.Protocols = HttpProtocols.Http1));
        var app = builder.Build();
        app.MapDseDashboard(configure: configure);
        await app.StartAsync();
        return app;
    }

    /// <summary>The dashboard's page of an app <see cref="StartAppAsync"/> started, ending with '/'.</summary>
    public static Uri DashboardOf(WebApplication app) =>
        new(new Uri(app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single()), "/dashboard/");

    /// <summary>Connects participants <paramref name="ids"/> with empty storage.</summary>
    public async Task ConnectAsync(params long[] ids)
    {
        foreach (long id in ids)
        {
            await Coordinator.ConnectAsync(new ConnectRequest(id, []));
        }
    }

    /// <summary>Reports <paramref name="version"/> of <paramref name="id"/> persisted, in the current world-line.</summary>
    public async Task ReportAsync(long id, long version, params Dependency[] dependencies) =>
        await Coordinator.ReportPersistedAsync(id, new VersionReport(version, Coordinator.WorldLine, dependencies));

    public async ValueTask DisposeAsync()
    {
        Http.Dispose();
        await _app.StopAsync();
        await _app.DisposeAsync();
        await Coordinator.DisposeAsync();
    }
}
