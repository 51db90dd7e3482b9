using System.Diagnostics.CodeAnalysis;
using System.Net;
using System.Net.Sockets;
using System.Text.RegularExpressions;
using Dse.Coordinator.Client;
using Dse.Testing;

namespace Dse.Cli.Tests;

/// <summary><c>dse status</c> and <c>dse remove</c> against a real coordinator host process on 127.0.0.1.</summary>
public sealed class CliCoordinatorTests : IAsyncLifetime
{
    private const string ListeningPrefix = "DSE coordinator listening on ";

    private readonly string _directory = Directory.CreateTempSubdirectory("dse-cli-coordinator-").FullName;
    private ChildProgram? _host;
    private Uri _address = null!;

    public async Task InitializeAsync()
    {
        _host = ChildProgram.Start("src/Coordinator/Dse.Coordinator.Host", "Dse.Coordinator.Host.dll",
            ["--port", "0", "--log", $"file:{Path.Combine(_directory, "coordinator.log")}", "--heartbeat-timeout", "off"]);
        string line = await _host.WaitForLineAsync(ListeningPrefix, TimeSpan.FromSeconds(30));
        _address = new Uri(line[ListeningPrefix.Length..]);
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
    public async Task Status_RunningCoordinator_ListsEveryRegisteredMember_WithItsVersionsWantedAndHeartbeatStatistics()
    {
        using var two = new GrpcCoordinatorClient(_address);
        using var three = new GrpcCoordinatorClient(_address);
        await two.ConnectAsync(new ConnectRequest(2, []));
        await three.ConnectAsync(new ConnectRequest(3, []));
        await two.ReportPersistedAsync(2, new VersionReport(1, 0, []));

        // 2's version 2 observed 3's version 1, which 3 has not persisted: the coordinator wants it (published shortly after).
        await two.ReportPersistedAsync(2, new VersionReport(2, 0, [new Dependency(3, 1)]));
        var waits = new BarrierWaitDistribution([1, 10], [3, 0, 1], SumMilliseconds: 20.5);
        await two.HeartbeatAsync(2, new ParticipantStatistics(7, 0, waits, [new QueueStatistics("orders", 5, 2, 1)]));
        using var hangGuard = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        var state = await two.GetStateAsync(hangGuard.Token);
        while (!state.Wanted.ContainsKey(3))
        {
            state = await two.WaitForChangeAsync(state.Epoch, hangGuard.Token);
        }

        var json = await DseTool.JsonAsync("status", "--coordinator", _address.ToString());
        var text = await DseTool.RunAsync("status", "--coordinator", _address.ToString());

        Assert.Equal(1, (long?)json["incarnation"]);
        Assert.Equal(0, (long?)json["worldLine"]);
        Assert.False((bool?)json["recovering"]);
        Assert.True(json.ContainsKey("fault") && json["fault"] is null);
        Assert.True((long)json["epoch"]! >= state.Epoch);
        var participants = json["participants"]!.AsArray().Select(p => p!.AsObject()).ToArray();
        Assert.Equal([2L, 3L], participants.Select(p => (long)p["id"]!));

        var reporting = participants[0];
        Assert.Equal((1L, 2L, 1), ((long)reporting["committed"]!, (long)reporting["persisted"]!, (int)reporting["uncommittedCount"]!));
        Assert.Equal(0, (long?)reporting["reportedWorldLine"]);
        Assert.False((bool?)reporting["removed"]);
        Assert.True(reporting.ContainsKey("removedBecause") && reporting["removedBecause"] is null);
        Assert.True(reporting.ContainsKey("wanted") && reporting["wanted"] is null);
        Assert.True((long)reporting["sinceHeardMs"]! >= 0);
        var statistics = reporting["statistics"]!.AsObject();
        Assert.Equal((7L, 0L), ((long)statistics["currentVersion"]!, (long)statistics["worldLine"]!));
        Assert.True((long)statistics["ageMs"]! >= 0);
        var barrier = statistics["barrierWaits"]!.AsObject();
        Assert.Equal(4, (long?)barrier["total"]);
        Assert.Equal(20.5, (double?)barrier["sumMs"]);
        Assert.Equal(1, (double?)barrier["p50Ms"]);
        Assert.True(barrier.ContainsKey("p99Ms") && barrier["p99Ms"] is null); // above the last bound
        Assert.Equal([1.0, 10.0], barrier["upperBoundsMs"]!.AsArray().Select(b => (double)b!));
        Assert.Equal([3L, 0L, 1L], barrier["counts"]!.AsArray().Select(c => (long)c!));
        var queue = Assert.Single(statistics["queues"]!.AsArray())!;
        Assert.Equal("orders", (string?)queue["name"]);
        Assert.Equal((5L, 2L, 1L), ((long)queue["unconsumed"]!, (long)queue["inSpilled"]!, (long)queue["outPending"]!));

        // 3 reported nothing and sent no statistics, yet it is listed: a registered member, wanted at version 1.
        var silent = participants[1];
        Assert.Equal((0L, 0L, 0), ((long)silent["committed"]!, (long)silent["persisted"]!, (int)silent["uncommittedCount"]!));
        Assert.Equal(1, (long?)silent["wanted"]);
        Assert.True(silent.ContainsKey("statistics") && silent["statistics"] is null);

        Assert.True(text.ExitCode == 0, text.Describe());
        Assert.Contains("participants 2", text.OutputLines);
        AssertLine(text, @"^ID +STATE +HEARD +STATS +WORLD-LINE +CURRENT +PERSISTED +COMMITTED +WANTED +UNCOMMITTED +WAITS +P50 +P99$");
        AssertLine(text, @"^2 +active +[0-9.]+ s +[0-9.]+ s +0 +7 +2 +1 +- +1 +4 +<=1 ms +>10 ms$");
        AssertLine(text, @"^3 +active +[0-9.]+ s +- +0 +- +0 +0 +1 +0 +- +- +-$");
        Assert.Contains("queues       1", text.OutputLines);
        Assert.Contains("2 orders: unconsumed 5, spilled IN 2, pending OUT 1", text.OutputLines);
        Assert.Contains("decisions    0", text.OutputLines);
    }

    [Fact]
    public async Task Status_AfterARemoval_ListsTheRemovedMemberWithWhy_AndWhatTheDecisionCostEachParticipant()
    {
        using var two = new GrpcCoordinatorClient(_address);
        using var four = new GrpcCoordinatorClient(_address);
        await two.ConnectAsync(new ConnectRequest(2, []));
        await four.ConnectAsync(new ConnectRequest(4, []));
        await two.ReportPersistedAsync(2, new VersionReport(1, 0, []));

        // 2's version 2 observed 4's version 1, which 4 never reports: removing 4 loses it.
        await two.ReportPersistedAsync(2, new VersionReport(2, 0, [new Dependency(4, 1)]));
        var removed = await DseTool.JsonAsync("remove", "--coordinator", _address.ToString(), "--id", "4");
        Assert.True((bool?)removed["removed"]);

        var json = await DseTool.JsonAsync("status", "--coordinator", _address.ToString());
        var text = await DseTool.RunAsync("status", "--coordinator", _address.ToString());

        var participants = json["participants"]!.AsArray().Select(p => p!.AsObject()).ToArray();
        Assert.Equal([2L, 4L], participants.Select(p => (long)p["id"]!));
        Assert.False((bool?)participants[0]["removed"]);
        Assert.True((bool?)participants[1]["removed"]);
        Assert.Contains("operator", (string?)participants[1]["removedBecause"], StringComparison.Ordinal);
        var decision = Assert.Single(json["decisions"]!.AsArray())!;
        Assert.Equal((1L, 4L, "Removed"), ((long)decision["worldLine"]!, (long)decision["failedObjectId"]!, (string)decision["reason"]!));
        Assert.True((bool?)decision["lossKnown"]);
        var cut = decision["cut"]!.AsArray().ToDictionary(c => (long)c!["id"]!, c => ((long)c!["version"]!, (long?)c["lostThrough"]));
        Assert.Equal((1L, 2L), cut[2]);
        Assert.Equal((0L, 0L), cut[4]);

        Assert.True(text.ExitCode == 0, text.Describe());
        Assert.Contains("participants 2 (1 removed)", text.OutputLines);
        AssertLine(text, @"^4 +removed +[0-9.]+ s +- +0 +- +0 +0 +- +0 +- +- +-$");
        Assert.Contains(text.OutputLines, l => l.StartsWith("4 removed: ", StringComparison.Ordinal) && l.Contains("operator", StringComparison.Ordinal));
        Assert.Contains("world-line 1: Removed of 4; cut 2:1 lost 2, 4:0", text.OutputLines);
    }

    [Fact]
    public async Task Remove_RegisteredThenRemovedThenUnknown_ReportsEachOutcome()
    {
        using var participant = new GrpcCoordinatorClient(_address);
        await participant.ConnectAsync(new ConnectRequest(4, []));

        var removed = await DseTool.JsonAsync("remove", "--coordinator", _address.ToString(), "--id", "4");
        var again = await DseTool.RunAsync("remove", "--coordinator", _address.ToString(), "--id", "4");
        var unknown = await DseTool.RunAsync("remove", "--coordinator", _address.ToString(), "--id", "9");
        var status = await DseTool.JsonAsync("status", "--coordinator", _address.ToString());

        Assert.True((bool?)removed["removed"]);
        Assert.True(again.ExitCode == 0, again.Describe());
        Assert.Contains("Participant 4 was removed already; nothing changed.", again.OutputLines);
        Assert.Contains("(UnknownParticipant)", DseTool.AssertOneLineError(unknown, 1), StringComparison.Ordinal);
        var decision = Assert.Single(status["decisions"]!.AsArray());
        Assert.Equal(4, (long?)decision!["failedObjectId"]);
        Assert.Equal("Removed", (string?)decision["reason"]);
    }

    [Fact]
    public async Task StatusAndRemove_UnreachableCoordinator_FailOnOneLine()
    {
        string closed = $"http://127.0.0.1:{ClosedPort()}";

        string status = DseTool.AssertOneLineError(await DseTool.RunAsync("status", "--coordinator", closed, "--json"), 1);
        string remove = DseTool.AssertOneLineError(await DseTool.RunAsync("remove", "--coordinator", closed, "--id", "1"), 1);

        Assert.Contains("unreachable", status, StringComparison.Ordinal);
        Assert.Contains("unreachable", remove, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Remove_MissingOrInvalidArguments_AreUsageErrors()
    {
        Assert.Contains("--id is required", DseTool.AssertOneLineError(await DseTool.RunAsync("remove", "--coordinator", _address.ToString()), 2), StringComparison.Ordinal);
        DseTool.AssertOneLineError(await DseTool.RunAsync("remove", "--coordinator", "ftp://x", "--id", "1"), 2);
        DseTool.AssertOneLineError(await DseTool.RunAsync("status"), 2);
    }

    /// <summary>
    /// Asserts a line of what the run printed (trimmed, as <see cref="ProgramRun.OutputLines"/> gives them) matches
    /// <paramref name="pattern"/>, showing the output when none does.
    /// </summary>
    private static void AssertLine(ProgramRun run, [StringSyntax(StringSyntaxAttribute.Regex)] string pattern) =>
        Assert.True(run.OutputLines.Any(l => Regex.IsMatch(l, pattern)), $"no line matches {pattern}\n{run.Describe()}");

    /// <summary>A port nothing listens on: one the OS handed out and that was closed again.</summary>
    private static int ClosedPort()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }
}
