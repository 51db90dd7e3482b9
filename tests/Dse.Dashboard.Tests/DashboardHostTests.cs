using System.Net;
using System.Net.Http.Headers;
using System.Text.Json;
using Dse.Coordinator.Client;
using Dse.Darq;
using Dse.Grpc;
using Dse.Testing;
using Microsoft.Playwright;
using static Microsoft.Playwright.Assertions;
using DarqQueue = Dse.Darq.Darq;

namespace Dse.Dashboard.Tests;

/// <summary>
/// The dashboard of the coordinator host, run as a process of its own with <c>--dashboard-port</c> and a participants
/// file; participants are gRPC clients of it, as in production.
/// </summary>
[Trait("Category", "MultiProcess")]
public sealed class DashboardHostTests : IAsyncLifetime
{
    private static readonly TimeSpan StartTimeout = TimeSpan.FromSeconds(60);

    /// <summary>How often the DARQs' heartbeats carry their statistics: the default, as deployed.</summary>
    private static readonly TimeSpan HeartbeatPeriod = TimeSpan.FromSeconds(1);

    private readonly string _directory = Directory.CreateTempSubdirectory("dse-dashboard-").FullName;
    private readonly string _operatorToken = DseCredentials.CreateToken();
    private readonly string[] _participantTokens = [.. Enumerable.Range(1, 5).Select(_ => DseCredentials.CreateToken())];
    private ChildProgram? _host;
    private Uri? _coordinator;
    private Uri? _dashboard;

    public async Task InitializeAsync()
    {
        string participants = Path.Combine(_directory, "participants");
        await File.WriteAllLinesAsync(participants,
        [
            .. _participantTokens.Select((token, i) => $"participant {i + 1} {DseCredentials.HashToken(token)}"),
            $"operator ops {DseCredentials.HashToken(_operatorToken)}",
        ]);
        _host = ChildProgram.Start("src/Coordinator/Dse.Coordinator.Host", "Dse.Coordinator.Host.dll",
            ["--port", "0", "--dashboard-port", "0", "--log", $"file:{Path.Combine(_directory, "coordinator.log")}", "--participants", participants, "--heartbeat-timeout", "off"]);
        _coordinator = new Uri((await _host.WaitForLineAsync("DSE coordinator listening on ", StartTimeout))["DSE coordinator listening on ".Length..]);
        _dashboard = new Uri((await _host.WaitForLineAsync("DSE coordinator dashboard on ", StartTimeout))["DSE coordinator dashboard on ".Length..]);
    }

    public async Task DisposeAsync()
    {
        if (_host is not null)
        {
            await _host.DisposeAsync();
        }

        Directory.Delete(_directory, recursive: true);
    }

    [Fact]
    public async Task Host_ServesTheDashboard_WithItsParticipants_AndOnlyAnOperatorMayRemove()
    {
        Assert.EndsWith("/dashboard/", _dashboard!.AbsolutePath, StringComparison.Ordinal);
        using var one = Client(1);
        using var two = Client(2);
        await one.ConnectAsync(new ConnectRequest(1, []));
        await two.ConnectAsync(new ConnectRequest(2, []));
        await one.ReportPersistedAsync(1, new VersionReport(1, 0, []));

        using var http = new HttpClient { BaseAddress = _dashboard, Timeout = TimeSpan.FromSeconds(30) };
        using (var view = JsonDocument.Parse(await http.GetStringAsync("api/snapshot")))
        {
            var participants = view.RootElement.GetProperty("participants").EnumerateArray().ToArray();
            Assert.Equal([1L, 2L], participants.Select(p => p.GetProperty("id").GetInt64()));
            Assert.Equal(1, participants[0].GetProperty("committed").GetInt64());
            Assert.True(view.RootElement.GetProperty("removalAvailable").GetBoolean());
        }

        using (var refused = await http.PostAsync("api/participants/2/remove?confirm=2", null))
        {
            Assert.Equal(HttpStatusCode.Unauthorized, refused.StatusCode);
        }

        using (var asParticipant = new HttpRequestMessage(HttpMethod.Post, "api/participants/2/remove?confirm=2"))
        {
            asParticipant.Headers.Authorization = new AuthenticationHeaderValue("Bearer", _participantTokens[1]);
            using var refused = await http.SendAsync(asParticipant);
            Assert.Equal(HttpStatusCode.Forbidden, refused.StatusCode);
        }

        using (var asOperator = new HttpRequestMessage(HttpMethod.Post, "api/participants/2/remove?confirm=2"))
        {
            asOperator.Headers.Authorization = new AuthenticationHeaderValue("Bearer", _operatorToken);
            using var removed = await http.SendAsync(asOperator);
            Assert.Equal(HttpStatusCode.OK, removed.StatusCode);
        }

        using var after = JsonDocument.Parse(await http.GetStringAsync("api/snapshot"));
        Assert.True(after.RootElement.GetProperty("participants")[1].GetProperty("removed").GetBoolean());
        Assert.Equal("Removed", after.RootElement.GetProperty("decisions")[0].GetProperty("reason").GetString());
    }

    [ChromiumFact]
    public async Task Host_InABrowser_ShowsParticipants_TheirBarrierWaitsAndQueues_TheBoundaryMoving_AndARollbackAfterARestart()
    {
        using var guard = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        using var one = Client(1);
        using var two = Client(2);
        using var three = Client(3);

        // Participants 4 and 5 are DARQs over gRPC: "orders" forwards to "billing", and to "audit", which nobody serves.
        using var ordersClient = Client(4);
        using var billingClient = Client(5);
        var destinations = new DarqDestinationRegistry();
        await using var billing = await ClusterDarq.OpenAsync("billing", 5, billingClient, HeartbeatPeriod);
        destinations.Add(billing);
        await using var orders = await ClusterDarq.OpenAsync("orders", 4, ordersClient, HeartbeatPeriod, destinations);
        var processor = await ForwardOrdersAsync(orders, guard.Token);

        await one.ConnectAsync(new ConnectRequest(1, []));
        await two.ConnectAsync(new ConnectRequest(2, []));
        await three.ConnectAsync(new ConnectRequest(3, []));
        await one.ReportPersistedAsync(1, new VersionReport(1, 0, []));
        await two.ReportPersistedAsync(2, new VersionReport(1, 0, [new Dependency(1, 1)]));

        using var playwright = await Playwright.CreateAsync();
        await using var browser = await playwright.Chromium.LaunchAsync(new() { ExecutablePath = ChromiumFactAttribute.ExecutablePath, Headless = true });
        var page = await browser.NewPageAsync(new() { ViewportSize = new() { Width = 1280, Height = 900 } });
        await page.GotoAsync(_dashboard!.ToString());
        var patient = new LocatorAssertionsToHaveTextOptions { Timeout = 15_000 };

        await Expect(page.Locator("#participants tbody tr")).ToHaveCountAsync(5, new() { Timeout = 15_000 });
        await Expect(Cell(page, 2, "committed")).ToHaveTextAsync("1", patient);

        // The DARQs' heartbeats carry their versions, barrier waits and depths; the other participants' carry none.
        await Expect(Cell(page, 4, "current")).ToHaveTextAsync(new System.Text.RegularExpressions.Regex("^[1-9][0-9]*$"), patient);
        await Expect(Cell(page, 1, "current")).ToHaveTextAsync("-", patient);
        await Expect(page.Locator("#barrier-waits tr[data-participant='4'] td.count")).ToHaveTextAsync(new System.Text.RegularExpressions.Regex("^[1-9][0-9]*$"), patient);
        await Expect(page.Locator("#queues tr[data-queue='4:orders'] td.unconsumed")).ToHaveTextAsync("2", patient);
        await Expect(page.Locator("#queues tr[data-queue='4:orders'] td.out-pending")).ToHaveTextAsync("1", patient);
        await Expect(page.Locator("#queues tr[data-queue='5:billing'] td.unconsumed")).ToHaveTextAsync("2", patient);

        // The boundary moves over a few seconds of reports, as the page's chart shows.
        for (long v = 2; v <= 12; v++)
        {
            await one.ReportPersistedAsync(1, new VersionReport(v, 0, [new Dependency(2, v - 1)]));
            await two.ReportPersistedAsync(2, new VersionReport(v, 0, [new Dependency(1, v)]));
            await three.ReportPersistedAsync(3, new VersionReport(v - 1, 0, [new Dependency(2, v)]));
            await Expect(Cell(page, 2, "committed")).ToHaveTextAsync(v.ToString(System.Globalization.CultureInfo.InvariantCulture), patient);
        }

        // Open versions: 1's version 14 waits for 3's version 12, which is not reported, and 2's version 13 observed it.
        await one.ReportPersistedAsync(1, new VersionReport(13, 0, []));
        await one.ReportPersistedAsync(1, new VersionReport(14, 0, [new Dependency(3, 12)]));
        await two.ReportPersistedAsync(2, new VersionReport(13, 0, [new Dependency(1, 14)]));
        await Expect(page.Locator("#graph circle[data-node='2:13']")).ToHaveCountAsync(1, new() { Timeout = 15_000 });
        await Expect(Cell(page, 1, "committed")).ToHaveTextAsync("13", patient);

        // Participant 1 restarts with version 13 in its storage but not 14: 14 is lost, and 2's version 13 that observed it.
        using var restarted = Client(1);
        await restarted.ConnectAsync(new ConnectRequest(1, [new VersionReport(13, 0, [])]));
        var decision = page.Locator("#decisions tbody tr[data-world-line='1']");
        await Expect(decision.Locator("td.cause")).ToHaveTextAsync("restart", patient);
        await Expect(decision.Locator("[data-cut='1']")).ToContainTextAsync("1 \u2192 13  lost 14", new() { Timeout = 15_000 });
        await Expect(decision.Locator("[data-cut='2']")).ToContainTextAsync("2 \u2192 12  lost 13", new() { Timeout = 15_000 });
        await Expect(Cell(page, 2, "uncommitted")).ToHaveTextAsync("0", patient);

        // Work goes on in world-line 1: a cycle of open versions, waiting for 2's version 14.
        await restarted.ReportPersistedAsync(1, new VersionReport(14, 1, [new Dependency(3, 12)]));
        await two.ReportPersistedAsync(2, new VersionReport(13, 1, [new Dependency(1, 14)]));
        await three.ReportPersistedAsync(3, new VersionReport(12, 1, [new Dependency(2, 14)]));
        await Expect(page.Locator("#graph circle[data-node='3:12']")).ToHaveCountAsync(1, new() { Timeout = 15_000 });
        await Expect(page.Locator("#graph [data-edge='dangling']")).ToHaveCountAsync(1);
        await Expect(Cell(page, 1, "world-line")).ToHaveTextAsync("1", patient);

        // The DARQs applied the decision without losing anything: their own world-line is 1.
        await Expect(Cell(page, 4, "own-world-line")).ToHaveTextAsync("1", patient);

        // Orders keeps waiting at barriers: the waits between its latest heartbeats show beside the total.
        using var stopLoad = CancellationTokenSource.CreateLinkedTokenSource(guard.Token);
        var load = WaitAtBarriersAsync(orders, processor, stopLoad.Token);
        await Expect(page.Locator("#barrier-waits tr[data-participant='4'] td.latest")).ToHaveTextAsync(new System.Text.RegularExpressions.Regex("^[1-9][0-9]*$"), patient);

        if (Environment.GetEnvironmentVariable("DSE_DASHBOARD_SCREENSHOT") is { Length: > 0 } screenshot)
        {
            await page.ScreenshotAsync(new() { Path = screenshot, FullPage = true });
        }

        await stopLoad.CancelAsync();
        await load;
    }

    /// <summary>
    /// Five orders arrive; two are forwarded to billing, one to "audit" (pending: nobody serves it), two stay unconsumed;
    /// each step's caller waits until it is recoverable, as a service does before it answers. Returns the processor.
    /// </summary>
    private static async Task<DarqProcessor> ForwardOrdersAsync(DarqQueue orders, CancellationToken cancellationToken)
    {
        var processor = await orders.RegisterProcessorAsync(cancellationToken);
        for (int i = 1; i <= 5; i++)
        {
            await orders.EnqueueAsync(ClusterDarq.Bytes($"order {i}"), cancellationToken);
        }

        foreach (string destination in new[] { "billing", "billing", "audit" })
        {
            var order = await processor.Messages.ReadAsync(cancellationToken);
            var step = await processor.StepAsync(new DarqStep().Consume(order.Lsn).AddOut(destination, order.Payload), cancellationToken);
            await orders.WaitForRecoverableAsync(step.DurableAt - 1, cancellationToken);
            if (destination == "billing")
            {
                await orders.WaitForDeliveredAsync(step.OutLsns[0], cancellationToken);
            }
        }

        return processor;
    }

    /// <summary>
    /// Until cancelled: a ping arrives, is consumed, and the caller waits until that step is recoverable. The two
    /// orders left unconsumed stay so.
    /// </summary>
    private static async Task WaitAtBarriersAsync(DarqQueue orders, DarqProcessor processor, CancellationToken cancellationToken)
    {
        try
        {
            for (long i = 0; ; i++)
            {
                await orders.EnqueueAsync(ClusterDarq.Bytes($"ping {i}"), cancellationToken);
                DarqMessage ping;
                do
                {
                    ping = await processor.Messages.ReadAsync(cancellationToken);
                }
                while (!ping.Payload.Span.StartsWith("ping"u8));

                var step = await processor.StepAsync(new DarqStep().Consume(ping.Lsn), cancellationToken);
                await orders.WaitForRecoverableAsync(step.DurableAt - 1, cancellationToken);
            }
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            // The screenshot is taken.
        }
    }

    private static ILocator Cell(IPage page, long id, string column) => page.Locator($"#participants tr[data-participant='{id}'] td.{column}");

    private GrpcCoordinatorClient Client(long id) =>
        new(_coordinator!, new GrpcCoordinatorClientOptions { Token = _participantTokens[id - 1] });
}
