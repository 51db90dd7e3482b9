using Dse.Coordinator;
using Dse.Storage;
using Dse.Testing;

namespace Dse.Cli.Tests;

/// <summary><c>dse log inspect</c> on a coordinator journal and a snapshot log the libraries wrote, and on files that are neither.</summary>
public sealed class CliLogInspectTests : IDisposable
{
    private readonly string _directory = Directory.CreateTempSubdirectory("dse-cli-log-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    [Fact]
    public async Task LogInspect_CoordinatorJournal_ListsItsRecords()
    {
        string path = Path.Combine(_directory, "coordinator.log");
        await using (var log = new FileCoordinatorLog(path))
        {
            var (journal, _) = await CoordinatorJournal.OpenAsync(log);
            await journal.AppendAsync(new CoordinatorStartedEntry(1));
            await journal.AppendAsync(new ParticipantRegisteredEntry(3));
            await journal.AppendAsync(new ParticipantRegisteredEntry(5));
            await journal.AppendAsync(new RollbackDecidedEntry(new RollbackDecision(1, 3, new Dictionary<long, long> { [3] = 4, [5] = 9 })));
            await journal.AppendAsync(new RollbackAcknowledgedEntry(5, 1, 9));
        }

        var before = DirectoryContents.Snapshot(_directory);
        var json = await DseTool.JsonAsync("log", "inspect", path);

        Assert.Equal("coordinator-journal", (string?)json["kind"]);
        Assert.Equal([1L], json["incarnations"]!.AsArray().Select(n => (long)n!));
        Assert.Equal([3L, 5L], json["participants"]!.AsArray().Select(n => (long)n!));
        var records = json["records"]!.AsArray();
        Assert.Equal(["CoordinatorStarted", "ParticipantRegistered", "ParticipantRegistered", "RollbackDecided", "RollbackAcknowledged"],
            records.Select(r => (string)r!["type"]!));
        Assert.Equal(3, (long?)records[3]!["failedObjectId"]);
        Assert.Null(json["tornTail"]);
        Assert.Equal(before, DirectoryContents.Snapshot(_directory));
    }

    [Fact]
    public async Task LogInspect_JournalWithTornTail_ReportsItWithoutTruncating()
    {
        string path = Path.Combine(_directory, "coordinator.log");
        await using (var log = new FileCoordinatorLog(path))
        {
            var (journal, _) = await CoordinatorJournal.OpenAsync(log);
            await journal.AppendAsync(new CoordinatorStartedEntry(1));
        }

        long length = new FileInfo(path).Length;
        await File.AppendAllBytesAsync(path, [0x44, 0x53, 0x45]);

        var json = await DseTool.JsonAsync("log", "inspect", path);

        Assert.Single(json["records"]!.AsArray());
        Assert.Equal(length, (long?)json["tornTail"]!["offset"]);
        Assert.Equal(length + 3, new FileInfo(path).Length);
    }

    [Fact]
    public async Task LogInspect_SnapshotLog_ListsRecordsMarkersAndLiveKeys()
    {
        string prefix = Path.Combine(_directory, "visits");
        await using (var log = await SnapshotLog.OpenAsync(DseDevices.CreateLocalFile(prefix)))
        {
            await log.AppendAsync(1, "one"u8.ToArray());
            await log.AppendAsync(2, "two"u8.ToArray());
            await log.AppendAsync(3, "three"u8.ToArray());
            await log.DropAfterAsync(2);
            await log.AppendAsync(4, "four"u8.ToArray());
        }

        var byPrefix = await DseTool.JsonAsync("log", "inspect", prefix);
        var bySegment = await DseTool.JsonAsync("log", "inspect", prefix + ".0");

        Assert.Equal("snapshot-log", (string?)byPrefix["kind"]);
        Assert.Equal(["data", "data", "data", "drop-after", "data"], byPrefix["records"]!.AsArray().Select(r => (string)r!["kind"]!));
        Assert.Equal([1L, 2L, 4L], byPrefix["liveKeys"]!.AsArray().Select(n => (long)n!));
        Assert.Equal(byPrefix["records"]!.ToJsonString(), bySegment["records"]!.ToJsonString());
    }

    [Fact]
    public async Task LogInspect_MissingOrForeignFile_FailsOnOneLine()
    {
        string foreign = Path.Combine(_directory, "notes.txt");
        File.WriteAllText(foreign, "neither a journal nor a snapshot log");

        string missing = DseTool.AssertOneLineError(await DseTool.RunAsync("log", "inspect", Path.Combine(_directory, "absent.log")), 1);
        string neither = DseTool.AssertOneLineError(await DseTool.RunAsync("log", "inspect", foreign, "--json"), 1);

        Assert.Contains("no file", missing, StringComparison.Ordinal);
        Assert.Contains("neither a coordinator journal nor a snapshot log", neither, StringComparison.Ordinal);
    }
}
