using Dse.Darq;
using Dse.Storage;
using Dse.Testing;
using DarqQueue = Dse.Darq.Darq;

namespace Dse.Cli.Tests;

/// <summary><c>dse darq inspect</c> on a DARQ the Darq library wrote in a temporary directory.</summary>
public sealed class CliDarqInspectTests : IDisposable
{
    private readonly string _directory = Directory.CreateTempSubdirectory("dse-cli-darq-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    [Fact]
    public async Task DarqInspect_ClosedDarq_ReportsEntriesUnconsumedMessagesProducersAndIncarnations()
    {
        await using (var darq = await DarqQueue.OpenAsync(Options()))
        {
            await WriteAsync(darq);
        }

        var before = DirectoryContents.Snapshot(_directory);
        var json = await DseTool.JsonAsync("darq", "inspect", _directory, "--entries");
        var text = await DseTool.RunAsync("darq", "inspect", _directory);

        Assert.Equal("orders", (string?)json["name"]);
        Assert.Equal(1, (long?)json["incarnation"]);
        Assert.Equal([1L], json["registrations"]!.AsArray().Select(n => (long)n!));
        var kinds = json["entriesByKind"]!.AsObject();
        Assert.Equal(3, (long?)kinds["IN"]);
        Assert.Equal(1, (long?)kinds["SELF"]);
        Assert.Equal(1, (long?)kinds["OUT"]);
        Assert.Equal(1, (long?)kinds["COMPLETION"]);
        Assert.Equal(1, (long?)kinds["REGISTER"]);
        Assert.Equal(7, (long?)json["entryCount"]);
        Assert.Equal(7, json["entries"]!.AsArray().Count);

        // The step consumed the first IN message; the other two and the step's SELF message remain.
        var unconsumed = json["unconsumed"]!.AsArray();
        Assert.Equal(["IN", "IN", "SELF"], unconsumed.Select(n => (string)n!["kind"]!));
        Assert.Equal(42, (long?)unconsumed[0]!["producerId"]);
        Assert.Equal(2, (long?)unconsumed[0]!["producerSequence"]);
        Assert.Equal(5, (long?)unconsumed[2]!["length"]);
        var pending = Assert.Single(json["pendingOut"]!.AsArray());
        Assert.Equal("billing", (string?)pending!["destination"]);

        var producers = json["producers"]!.AsArray();
        Assert.Equal([(7L, 5L), (42L, 2L)], producers.Select(p => ((long)p!["id"]!, (long)p["largestSequence"]!)));

        Assert.Equal(0, text.ExitCode);
        Assert.Contains("pending OUT  1 (acknowledged 0, discarded 0)", text.OutputLines);
        Assert.Equal(before, DirectoryContents.Snapshot(_directory));
    }

    [Fact]
    public async Task DarqInspect_DarqOpenInAnotherProcess_RefusesOnOneLineAndChangesNothing()
    {
        await using var darq = await DarqQueue.OpenAsync(Options());
        await WriteAsync(darq);
        var before = DirectoryContents.Snapshot(_directory);

        var run = await DseTool.RunAsync("darq", "inspect", _directory);

        string line = DseTool.AssertOneLineError(run, 1);
        Assert.Contains("is open in a running process", line, StringComparison.Ordinal);
        Assert.Equal(before, DirectoryContents.Snapshot(_directory));
        await darq.EnqueueAsync("still works"u8.ToArray());
    }

    [Fact]
    public async Task DarqInspect_MissingPathOrNonDarqDirectory_FailsOnOneLine()
    {
        string missing = DseTool.AssertOneLineError(await DseTool.RunAsync("darq", "inspect", Path.Combine(_directory, "absent")), 1);
        File.WriteAllText(Path.Combine(_directory, "notes.txt"), "not a DARQ");
        string notDarq = DseTool.AssertOneLineError(await DseTool.RunAsync("darq", "inspect", _directory, "--json"), 1);

        Assert.Contains("no directory", missing, StringComparison.Ordinal);
        Assert.Contains("holds no DARQ", notDarq, StringComparison.Ordinal);
    }

    private DarqOptions Options() => new()
    {
        Name = "orders",
        LogDevice = DseDevices.CreateLocalFile(Path.Combine(_directory, "orders.log")),
        CommitDevice = DseDevices.CreateLocalFile(Path.Combine(_directory, "orders.commit")),
    };

    /// <summary>Three producer messages, a processor, and one step that consumes the first and writes a SELF and an OUT message.</summary>
    private static async Task WriteAsync(DarqQueue darq)
    {
        var first = await darq.EnqueueAsync(producerId: 42, sequenceNumber: 1, "order-1"u8.ToArray());
        await darq.EnqueueAsync(producerId: 42, sequenceNumber: 2, "order-2"u8.ToArray());
        await darq.EnqueueAsync(producerId: 7, sequenceNumber: 5, "order-3"u8.ToArray());
        var processor = await darq.RegisterProcessorAsync();
        await processor.StepAsync(new DarqStep().Consume(first.Lsn).AddSelf("state"u8.ToArray()).AddOut("billing", "bill-1"u8.ToArray()));
        await darq.CommitAsync();
    }
}
