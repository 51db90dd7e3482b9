using System.Text.RegularExpressions;
using Dse.Darq;
using Microsoft.Playwright;
using static Microsoft.Playwright.Assertions;

namespace Dse.Dashboard.Tests;

/// <summary>
/// The dashboard in a real browser (Debian's Chromium, headless, through Playwright): the page follows a running
/// coordinator without a reload.
/// </summary>
public sealed class DashboardBrowserTests : IAsyncLifetime
{
    private static readonly LocatorAssertionsToHaveTextOptions Patient = new() { Timeout = 15_000 };
    private IPlaywright? _playwright;
    private IBrowser? _browser;

    public async Task InitializeAsync()
    {
        if (!File.Exists(ChromiumFactAttribute.ExecutablePath))
        {
            return;
        }

        _playwright = await Playwright.CreateAsync();
        _browser = await _playwright.Chromium.LaunchAsync(new() { ExecutablePath = ChromiumFactAttribute.ExecutablePath, Headless = true });
    }

    public async Task DisposeAsync()
    {
        if (_browser is not null)
        {
            await _browser.DisposeAsync();
        }

        _playwright?.Dispose();
    }

    [ChromiumFact]
    public async Task Page_ShowsParticipants_TheBoundaryMoving_AndARollbackAfterARestart()
    {
        await using var server = await DashboardServer.StartAsync();
        await server.ConnectAsync(1, 2, 3);
        await server.ReportAsync(1, 1);
        await server.ReportAsync(2, 1, new Dependency(1, 1));

        var page = await NewPageAsync();
        await page.GotoAsync(server.Dashboard.ToString());

        // The participants appear, with their committed versions.
        await Expect(page.Locator("#connection")).ToHaveTextAsync("live", Patient);
        await Expect(page.Locator("#participants tbody tr")).ToHaveCountAsync(3, new() { Timeout = 15_000 });
        await Expect(Cell(page, 1, "committed")).ToHaveTextAsync("1", Patient);
        await Expect(Cell(page, 2, "committed")).ToHaveTextAsync("1", Patient);
        await Expect(page.Locator("#no-decisions")).ToBeVisibleAsync();

        // The boundary moves as participants report new versions, without a reload.
        await server.ReportAsync(1, 2);
        await server.ReportAsync(1, 3, new Dependency(2, 2));
        await server.ReportAsync(2, 2, new Dependency(1, 3));
        await Expect(Cell(page, 1, "committed")).ToHaveTextAsync("3", Patient);
        await Expect(Cell(page, 2, "committed")).ToHaveTextAsync("2", Patient);
        await Expect(page.Locator("#boundary")).ToContainTextAsync("1: 3", new() { Timeout = 15_000 });
        await Expect(page.Locator("#boundary-chart polyline[data-series='1']")).ToHaveCountAsync(1);

        // Open versions: 1's version 4 waits for 3's version 1, and 2's version 3 observed it.
        await server.ReportAsync(1, 4, new Dependency(3, 1));
        await server.ReportAsync(2, 3, new Dependency(1, 4));
        await Expect(Cell(page, 1, "uncommitted")).ToHaveTextAsync("1", Patient);
        await Expect(page.Locator("#graph circle[data-node='2:3']")).ToHaveCountAsync(1, new() { Timeout = 15_000 });
        await Expect(page.Locator("#graph [data-edge='open']")).ToHaveCountAsync(1);
        await Expect(page.Locator("#graph [data-edge='dangling']")).ToHaveCountAsync(1);

        // Participant 1 restarts with versions 1 to 3 in its storage: its version 4 and 2's version 3 are lost.
        await server.Coordinator.ConnectAsync(new ConnectRequest(1, [new VersionReport(3, 0, [new Dependency(2, 2)])]));
        var decision = page.Locator("#decisions tbody tr[data-world-line='1']");
        await Expect(decision.Locator("td.cause")).ToHaveTextAsync("restart", Patient);
        await Expect(decision.Locator("td.failed")).ToHaveTextAsync("1", Patient);
        await Expect(decision.Locator("[data-cut='1']")).ToContainTextAsync("1 \u2192 3  lost 4", new() { Timeout = 15_000 });
        await Expect(decision.Locator("[data-cut='2']")).ToContainTextAsync("2 \u2192 2  lost 3", new() { Timeout = 15_000 });
        await Expect(page.Locator("#world-line")).ToHaveTextAsync("1", Patient);
        await Expect(page.Locator("#no-decisions")).ToBeHiddenAsync();

        await ScreenshotAsync(page, server);
    }

    [ChromiumFact]
    public async Task Page_ShowsAParticipantsCurrentVersion_ItsBarrierWaits_AndItsDarqQueue()
    {
        using var guard = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        await using var server = await DashboardServer.StartAsync();
        await server.ConnectAsync(2); // a participant whose heartbeats carry no statistics
        await using var orders = await ClusterDarq.OpenAsync("orders", 1, server.Coordinator, TimeSpan.FromMilliseconds(100));

        // Three orders arrive; one is consumed and forwarded to a destination nobody resolves, so it stays pending.
        var processor = await orders.RegisterProcessorAsync(guard.Token);
        DarqEnqueueResult last = default;
        for (int i = 1; i <= 3; i++)
        {
            last = await orders.EnqueueAsync(ClusterDarq.Bytes($"order {i}"), guard.Token);
        }

        var first = await processor.Messages.ReadAsync(guard.Token);
        await processor.StepAsync(new DarqStep().Consume(first.Lsn).AddOut("audit", first.Payload), guard.Token);

        // Waiting until the last order is recoverable is a barrier wait; after it, the DARQ's version is at least the committed one.
        await orders.WaitForRecoverableAsync(last.Lsn, guard.Token);
        long committed = orders.DseStateObject!.CommittedVersion;
        Assert.True(committed >= 1);

        var page = await NewPageAsync();
        await page.GotoAsync(server.Dashboard.ToString());

        await page.WaitForFunctionAsync(
            "([selector, least]) => Number(document.querySelector(selector)?.textContent) >= least",
            new object[] { "#participants tr[data-participant='1'] td.current", committed },
            new() { Timeout = 15_000 });
        await Expect(Cell(page, 1, "own-world-line")).ToHaveTextAsync("0", Patient);
        await Expect(Cell(page, 1, "statistics-age")).ToHaveTextAsync(new Regex(" ago$"), Patient);
        var waits = page.Locator("#barrier-waits tr[data-participant='1']");
        await Expect(waits.Locator("td.count")).ToHaveTextAsync(new Regex("^[1-9][0-9]*$"), Patient);
        await Expect(waits.Locator("td.p99")).ToHaveTextAsync(new Regex(@"^(\u2264|>) [0-9.]+ m?s$"), Patient);
        await Expect(waits.Locator("svg.histogram g[data-bucket] rect").First).ToBeAttachedAsync();
        var queue = page.Locator("#queues tr[data-queue='1:orders']");
        await Expect(queue.Locator("td.unconsumed")).ToHaveTextAsync("2", Patient);
        await Expect(queue.Locator("td.out-pending")).ToHaveTextAsync("1", Patient);
        await Expect(queue.Locator("td.in-spilled")).ToHaveTextAsync("0", Patient);

        // The participant without statistics shows dashes.
        await Expect(Cell(page, 2, "current")).ToHaveTextAsync("-", Patient);
        await Expect(page.Locator("#barrier-waits tr[data-participant='2'] td.count")).ToHaveTextAsync("-", Patient);
        await Expect(page.Locator("#queues tr[data-participant='2'] td.queue")).ToHaveTextAsync("-", Patient);

    }

    [ChromiumFact]
    public async Task Page_IsReadOnly_UntilAnOperatorSignsIn_ThenRemovesAParticipantAfterConfirmation()
    {
        await using var server = await DashboardServer.StartAsync(withCredentials: true);
        await server.ConnectAsync(1, 2);

        var page = await NewPageAsync();
        await page.GotoAsync(server.Dashboard.ToString());
        await Expect(page.Locator("#participants tbody tr")).ToHaveCountAsync(2, new() { Timeout = 15_000 });
        await Expect(page.Locator("button.remove")).ToHaveCountAsync(0);

        // A participant's token does not make an operator.
        await page.FillAsync("#token", server.ParticipantToken!);
        await page.ClickAsync("#sign-in");
        await Expect(page.Locator("#operator-status")).ToHaveTextAsync("not an operator's token: read-only", Patient);
        await Expect(page.Locator("button.remove")).ToHaveCountAsync(0);

        await page.FillAsync("#token", server.OperatorToken!);
        await page.ClickAsync("#sign-in");
        await Expect(page.Locator("#operator-status")).ToHaveTextAsync("operator ops", Patient);
        await Expect(page.Locator("button.remove")).ToHaveCountAsync(2, new() { Timeout = 15_000 });

        // Dismissing the confirmation removes nothing; accepting it removes the participant.
        page.Dialog += DismissOnce;
        await page.ClickAsync("button[data-remove='2']");
        await Expect(page.Locator("button[data-remove='2']")).ToHaveCountAsync(1);
        Assert.DoesNotContain(server.Coordinator.Inspect().Participants, p => p.Removed);

        page.Dialog -= DismissOnce;
        page.Dialog += static (_, dialog) => _ = dialog.AcceptAsync();
        await page.ClickAsync("button[data-remove='2']");
        await Expect(page.Locator("#operator-status")).ToHaveTextAsync("removed participant 2", Patient);
        await Expect(Cell(page, 2, "state")).ToHaveTextAsync("removed", Patient);
        Assert.True(server.Coordinator.Inspect().Participants.Single(p => p.ObjectId == 2).Removed);

        static void DismissOnce(object? sender, IDialog dialog) => _ = dialog.DismissAsync();
    }

    private static ILocator Cell(IPage page, long id, string column) => page.Locator($"#participants tr[data-participant='{id}'] td.{column}");

    private async Task<IPage> NewPageAsync()
    {
        var context = await _browser!.NewContextAsync(new() { ViewportSize = new() { Width = 1280, Height = 900 } });
        return await context.NewPageAsync();
    }

    /// <summary>Saves the page: to the test output, and to DSE_DASHBOARD_SCREENSHOT when set (docs/images/dashboard.png is made so).</summary>
    private static async Task ScreenshotAsync(IPage page, DashboardServer server)
    {
        string path = Environment.GetEnvironmentVariable("DSE_DASHBOARD_SCREENSHOT") is { Length: > 0 } wanted
            ? wanted
            : Path.Combine(AppContext.BaseDirectory, "dashboard.png");

        // A second of events, so that the boundary chart has a history to draw.
        await server.ReportAsync(3, 1);
        await Expect(Cell(page, 3, "committed")).ToHaveTextAsync("1", Patient);
        await page.ScreenshotAsync(new() { Path = path, FullPage = true });
        Assert.True(new FileInfo(path).Length > 0);
    }
}
