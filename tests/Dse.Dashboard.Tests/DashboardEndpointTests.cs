using System.Net;
using System.Net.Http.Headers;
using System.Text.Json;

namespace Dse.Dashboard.Tests;

/// <summary>The dashboard's HTTP endpoints against an embedded coordinator: the page, the snapshot, the event stream.</summary>
public sealed class DashboardEndpointTests
{
    [Fact]
    public async Task Page_ServesTheEmbeddedPageScriptAndStyle_WithNothingFromElsewhere()
    {
        await using var server = await DashboardServer.StartAsync();

        using var page = await server.Http.GetAsync("");
        string html = await page.Content.ReadAsStringAsync();
        Assert.Equal(HttpStatusCode.OK, page.StatusCode);
        Assert.Equal("text/html", page.Content.Headers.ContentType?.MediaType);
        Assert.Contains("<base href=\"/dashboard/\">", html, StringComparison.Ordinal);
        Assert.Contains("<table id=\"barrier-waits\">", html, StringComparison.Ordinal);
        Assert.Contains("<table id=\"queues\">", html, StringComparison.Ordinal);
        Assert.Contains("default-src 'self'", page.Headers.GetValues("Content-Security-Policy").Single(), StringComparison.Ordinal);

        string script = await server.Http.GetStringAsync("dashboard.js");
        string style = await server.Http.GetStringAsync("dashboard.css");
        Assert.Contains("EventSource", script, StringComparison.Ordinal);

        // No CDN: nothing the page loads comes from another origin (the SVG namespace is a name, not a fetch).
        foreach (string asset in new[] { html, script.Replace("http://www.w3.org/2000/svg", "", StringComparison.Ordinal), style })
        {
            Assert.DoesNotContain("http://", asset, StringComparison.Ordinal);
            Assert.DoesNotContain("https://", asset, StringComparison.Ordinal);
        }

        // Without the trailing slash the page still names its base.
        string bare = await server.Http.GetStringAsync(new Uri(server.Dashboard, "/dashboard"));
        Assert.Contains("<base href=\"/dashboard/\">", bare, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Snapshot_ListsParticipantsWithTheirCommittedAndPersistedVersions()
    {
        await using var server = await DashboardServer.StartAsync();
        await server.ConnectAsync(1, 2);
        await server.ReportAsync(1, 1);
        await server.ReportAsync(1, 2);
        await server.ReportAsync(2, 1, new Dependency(1, 5)); // waits for a version of 1 not reported yet

        using var view = await SnapshotAsync(server);
        var participants = view.RootElement.GetProperty("participants").EnumerateArray().ToArray();
        Assert.Equal([1L, 2L], participants.Select(p => p.GetProperty("id").GetInt64()));
        Assert.Equal(2, participants[0].GetProperty("committed").GetInt64());
        Assert.Equal(2, participants[0].GetProperty("persisted").GetInt64());
        Assert.Equal(0, participants[1].GetProperty("committed").GetInt64());
        Assert.Equal(1, participants[1].GetProperty("persisted").GetInt64());
        Assert.Equal(1, participants[1].GetProperty("uncommittedCount").GetInt32());
        var open = participants[1].GetProperty("uncommitted")[0];
        Assert.Equal(1, open.GetProperty("version").GetInt64());
        Assert.Equal(1, open.GetProperty("dependencies")[0].GetProperty("id").GetInt64());
        Assert.Equal(5, open.GetProperty("dependencies")[0].GetProperty("version").GetInt64());
        Assert.True(participants[0].GetProperty("sinceHeardMs").GetInt64() >= 0);
        Assert.False(participants[0].GetProperty("removed").GetBoolean());
        Assert.Equal(JsonValueKind.Null, view.RootElement.GetProperty("operator").ValueKind);
        Assert.False(view.RootElement.GetProperty("removalAvailable").GetBoolean());
        Assert.Empty(view.RootElement.GetProperty("decisions").EnumerateArray());
    }

    [Fact]
    public async Task Snapshot_ShowsEachParticipantsLatestStatistics_AndNullWithoutThem()
    {
        await using var server = await DashboardServer.StartAsync();
        await server.ConnectAsync(1, 2);
        await server.ReportAsync(1, 1);
        var waits = new BarrierWaitDistribution([1, 10], [3, 0, 1], SumMilliseconds: 20.5);
        await server.Coordinator.HeartbeatAsync(1, new ParticipantStatistics(7, 0, waits, [new QueueStatistics("orders", 5, 2, 1)]));

        using var view = await SnapshotAsync(server);
        var participants = view.RootElement.GetProperty("participants").EnumerateArray().ToArray();
        var statistics = participants[0].GetProperty("statistics");
        Assert.Equal(7, statistics.GetProperty("currentVersion").GetInt64());
        Assert.Equal(0, statistics.GetProperty("worldLine").GetInt64());
        Assert.True(statistics.GetProperty("ageMs").GetInt64() >= 0);
        var barrier = statistics.GetProperty("barrierWaits");
        Assert.Equal(4, barrier.GetProperty("total").GetInt64());
        Assert.Equal(20.5, barrier.GetProperty("sumMs").GetDouble());
        Assert.Equal(1, barrier.GetProperty("p50Ms").GetDouble());
        Assert.Equal(JsonValueKind.Null, barrier.GetProperty("p99Ms").ValueKind); // above the last bound
        Assert.Equal([1.0, 10.0], barrier.GetProperty("upperBoundsMs").EnumerateArray().Select(b => b.GetDouble()));
        Assert.Equal([3L, 0L, 1L], barrier.GetProperty("counts").EnumerateArray().Select(c => c.GetInt64()));
        var queue = statistics.GetProperty("queues").EnumerateArray().Single();
        Assert.Equal("orders", queue.GetProperty("name").GetString());
        Assert.Equal((5L, 2L, 1L), (queue.GetProperty("unconsumed").GetInt64(), queue.GetProperty("inSpilled").GetInt64(), queue.GetProperty("outPending").GetInt64()));
        Assert.Equal(JsonValueKind.Null, participants[1].GetProperty("statistics").ValueKind);
    }

    [Fact]
    public async Task Snapshot_AParticipantThatNeverWaited_HasNoQuantiles()
    {
        await using var server = await DashboardServer.StartAsync();
        await server.ConnectAsync(1);
        await server.Coordinator.HeartbeatAsync(1, new ParticipantStatistics(0, 0, new BarrierWaitDistribution([1], [0, 0], 0), []));

        using var view = await SnapshotAsync(server);
        var barrier = view.RootElement.GetProperty("participants")[0].GetProperty("statistics").GetProperty("barrierWaits");
        Assert.Equal(0, barrier.GetProperty("total").GetInt64());
        Assert.Equal(JsonValueKind.Null, barrier.GetProperty("p50Ms").ValueKind);
        Assert.Equal(JsonValueKind.Null, barrier.GetProperty("p99Ms").ValueKind);
        Assert.Empty(view.RootElement.GetProperty("participants")[0].GetProperty("statistics").GetProperty("queues").EnumerateArray());
    }

    [Fact]
    public async Task Snapshot_AfterAParticipantRestart_ShowsTheDecisionWithItsCutAndWhatEachLost()
    {
        await using var server = await DashboardServer.StartAsync();
        await server.ConnectAsync(1, 2);
        await server.ReportAsync(1, 1);
        await server.ReportAsync(1, 2, new Dependency(2, 3));
        await server.ReportAsync(2, 1);
        await server.ReportAsync(2, 2, new Dependency(1, 2));

        // Participant 1 restarts with only version 1 in its storage: its version 2 is lost, and 2's version 2 with it.
        await server.Coordinator.ConnectAsync(new ConnectRequest(1, [new VersionReport(1, 0, [])]));

        using var view = await SnapshotAsync(server);
        Assert.Equal(1, view.RootElement.GetProperty("worldLine").GetInt64());
        var decision = view.RootElement.GetProperty("decisions").EnumerateArray().Single();
        Assert.Equal(1, decision.GetProperty("worldLine").GetInt64());
        Assert.Equal("Restart", decision.GetProperty("reason").GetString());
        Assert.Equal(1, decision.GetProperty("failed").GetInt64());
        Assert.True(decision.GetProperty("lossKnown").GetBoolean());
        var cut = decision.GetProperty("cut").EnumerateArray().ToDictionary(c => c.GetProperty("id").GetInt64());
        Assert.Equal(1, cut[1].GetProperty("version").GetInt64());
        Assert.Equal(2, cut[1].GetProperty("lostThrough").GetInt64());
        Assert.Equal(1, cut[2].GetProperty("version").GetInt64());
        Assert.Equal(2, cut[2].GetProperty("lostThrough").GetInt64());
    }

    [Fact]
    public async Task Events_PushTheViewAgain_WhenTheBoundaryMoves()
    {
        await using var server = await DashboardServer.StartAsync();
        await server.ConnectAsync(1);
        await server.ReportAsync(1, 1);

        using var cancel = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        using var request = new HttpRequestMessage(HttpMethod.Get, "api/events");
        using var response = await server.Http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, cancel.Token);
        Assert.Equal("text/event-stream", response.Content.Headers.ContentType?.MediaType);
        using var reader = new StreamReader(await response.Content.ReadAsStreamAsync(cancel.Token));

        var first = await NextEventAsync(reader, cancel.Token);
        Assert.Equal(1, Committed(first, 1));

        await server.ReportAsync(1, 2);
        long committed;
        do
        {
            using var next = await NextEventAsync(reader, cancel.Token);
            committed = Committed(next, 1);
        }
        while (committed < 2);

        Assert.Equal(2, committed);
        first.Dispose();
    }

    internal static async Task<JsonDocument> SnapshotAsync(DashboardServer server, string? token = null)
    {
        using var request = new HttpRequestMessage(HttpMethod.Get, "api/snapshot");
        if (token is not null)
        {
            request.Headers.Authorization = new AuthenticationHeaderValue("Bearer", token);
        }

        using var response = await server.Http.SendAsync(request);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        return JsonDocument.Parse(await response.Content.ReadAsStringAsync());
    }

    private static long Committed(JsonDocument view, long id) =>
        view.RootElement.GetProperty("participants").EnumerateArray().Single(p => p.GetProperty("id").GetInt64() == id).GetProperty("committed").GetInt64();

    private static async Task<JsonDocument> NextEventAsync(StreamReader reader, CancellationToken cancellationToken)
    {
        while (true)
        {
            string? line = await reader.ReadLineAsync(cancellationToken) ?? throw new EndOfStreamException("The event stream ended.");
            if (line.StartsWith("data: ", StringComparison.Ordinal))
            {
                return JsonDocument.Parse(line["data: ".Length..]);
            }
        }
    }
}
