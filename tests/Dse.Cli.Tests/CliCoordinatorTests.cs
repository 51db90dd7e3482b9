using System.Net;
using System.Net.Sockets;
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
    public async Task Status_RunningCoordinator_ShowsIncarnationAndTheBoundary()
    {
        using var participant = new GrpcCoordinatorClient(_address);
        await participant.ConnectAsync(new ConnectRequest(2, []));
        await participant.ReportPersistedAsync(2, new VersionReport(1, 0, []));
        var expected = await participant.GetStateAsync();

        var json = await DseTool.JsonAsync("status", "--coordinator", _address.ToString());
        var text = await DseTool.RunAsync("status", "--coordinator", _address.ToString());

        Assert.Equal(1, (long?)json["incarnation"]);
        Assert.Equal(0, (long?)json["worldLine"]);
        Assert.False((bool?)json["recovering"]);
        Assert.True((long)json["epoch"]! >= expected.Epoch);
        var only = Assert.Single(json["participants"]!.AsArray());
        Assert.Equal(2, (long?)only!["id"]);
        Assert.Equal(1, (long?)only["committed"]);
        Assert.Equal(0, text.ExitCode);
        Assert.Contains("2: committed 1", text.OutputLines);
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

    /// <summary>A port nothing listens on: one the OS handed out and that was closed again.</summary>
    private static int ClosedPort()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
    }
}
