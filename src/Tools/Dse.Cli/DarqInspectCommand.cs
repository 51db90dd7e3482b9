using System.Text.Json.Nodes;
using Dse.Darq;

namespace Dse.Cli;

/// <summary><c>dse darq inspect PATH</c>: a read-only view of a DARQ over local files that nothing has open.</summary>
internal static class DarqInspectCommand
{
    public const string Usage = """
        Usage: dse darq inspect PATH [--name NAME] [--page-size SIZE] [--segment-size SIZE] [--entries] [--json]

        Reads a DARQ over local files (docs/darq-format.md) without opening it and without changing a byte: its newest
        commit (incarnation, sequence numbers, deduplication table), then its committed, untruncated log. Prints the
        LSN range, entries by kind, the processor incarnations, the unconsumed IN, SELF and activity messages, the OUT
        messages not yet acknowledged, and the producers. A DARQ that a running process has open (it holds the lock
        files) is refused: stop it or inspect a copy.

          PATH                 The directory that holds the DARQ's NAME.log.N and NAME.commit.0 files.
          --name NAME          Which DARQ, when the directory holds several.
          --page-size SIZE     The DarqOptions.PageSize it was opened with. Default 1MB.
          --segment-size SIZE  The DarqOptions.SegmentSize it was opened with. Default: the size of a full segment
                               file when there is one, otherwise 64MB.
          --entries            Also list every entry: LSN, sequence number, kind, length.
          --json               Print one JSON document instead of text.
        """;

    public static async Task<CommandResult> RunAsync(IReadOnlyList<string> args, CancellationToken cancellationToken)
    {
        var arguments = CliArguments.Parse("darq inspect", args, positionalCount: 1, options: ["--name", "--page-size", "--segment-size"], flags: ["--entries"]);
        var defaults = new DarqOptions();
        long pageSize = arguments.PowerOfTwoSize("--page-size", defaults.PageSize, 4096);
        var files = DarqLogFiles.Find(arguments.Positional[0], arguments.Optional("--name"));
        long segmentSize = arguments.PowerOfTwoSize("--segment-size", FullSegmentSize(files) ?? defaults.SegmentSize, pageSize);
        if (segmentSize < pageSize)
        {
            throw new CliUsageException($"darq inspect: --segment-size ({segmentSize}) must be at least the page size ({pageSize}).");
        }

        DarqLogSummary summary;
        using (DarqStorageLock.Acquire(files))
        {
            summary = await DarqLogReader.ReadAsync(files, pageSize, segmentSize, arguments.Has("--entries"), cancellationToken);
        }

        return Render(files, summary);
    }

    /// <summary>The length of a segment file below the last one: FasterLog writes whole pages, so it is the segment size.</summary>
    private static long? FullSegmentSize(DarqLogFiles files)
    {
        var segments = files.Segments();
        if (segments.Count < 2)
        {
            return null;
        }

        long length = segments.First().Value.Length;
        return long.IsPow2(length) ? length : null;
    }

    private static CommandResult Render(DarqLogFiles files, DarqLogSummary summary)
    {
        var text = new List<string> { $"DARQ '{files.Name}' in {files.Directory}" };
        var json = new JsonObject { ["name"] = files.Name, ["directory"] = files.Directory };
        if (summary.Commit < 0)
        {
            text.Add("commit       none: the DARQ never committed, its log is empty");
            json["commit"] = null;
            return new CommandResult(text, json);
        }

        text.Add($"commit       {summary.Commit}{(summary.General ? " (general speculation)" : string.Empty)}");
        text.Add($"LSNs         begin {summary.BeginAddress}, committed tail {summary.TailAddress}");
        text.Add($"sequence     {summary.BeginSequence} to {summary.NextSequence - 1} ({summary.EntryCount} entries{(summary.VoidedEntries > 0 ? $", {summary.VoidedEntries} voided by rollbacks, skipped" : string.Empty)})");
        text.Add($"entries      {(summary.EntriesByKind.Count == 0 ? "none" : string.Join(", ", summary.EntriesByKind.Values.Select(e => $"{e.Kind} {e.Count}")))}");
        text.Add($"incarnation  {summary.Incarnation} (registrations in the log: {(summary.Registrations.Count == 0 ? "none" : string.Join(", ", summary.Registrations))})");
        if (summary.General)
        {
            text.Add($"versions     {(summary.Versions.Count == 0 ? "none" : string.Join(", ", summary.Versions))}; voided ranges {summary.VoidedRanges.Count}");
        }

        text.Add($"unconsumed   {summary.Unconsumed.Count}");
        var unconsumed = new JsonArray();
        foreach (var (lsn, message) in summary.Unconsumed)
        {
            string detail = message switch
            {
                { ProducerId: { } producer } => $", producer {producer} sequence {message.ProducerSequence}",
                { Activity: { } activity } => $", activity '{activity}'",
                _ => string.Empty,
            };
            text.Add($"  LSN {lsn}: {message.Kind}, {message.Length} bytes{detail}");
            unconsumed.Add(new JsonObject
            {
                ["lsn"] = lsn,
                ["kind"] = message.Kind,
                ["length"] = message.Length,
                ["producerId"] = message.ProducerId,
                ["producerSequence"] = message.ProducerSequence,
                ["activity"] = message.Activity,
            });
        }

        text.Add($"pending OUT  {summary.PendingOut.Count} (acknowledged {summary.Acknowledged}, discarded {summary.Discarded})");
        var pending = new JsonArray();
        foreach (var (lsn, (destination, length)) in summary.PendingOut)
        {
            text.Add($"  LSN {lsn}: to '{destination}', {length} bytes");
            pending.Add(new JsonObject { ["lsn"] = lsn, ["destination"] = destination, ["length"] = length });
        }

        text.Add($"producers    {summary.Producers.Count}");
        var producers = new JsonArray();
        foreach (var (id, sequence) in summary.Producers)
        {
            text.Add($"  {id}: largest sequence {sequence}");
            producers.Add(new JsonObject { ["id"] = id, ["largestSequence"] = sequence });
        }

        var kinds = new JsonObject();
        foreach (var (kind, count) in summary.EntriesByKind.Values)
        {
            kinds[kind] = count;
        }

        json["commit"] = summary.Commit;
        json["generalSpeculation"] = summary.General;
        json["beginLsn"] = summary.BeginAddress;
        json["tailLsn"] = summary.TailAddress;
        json["beginSequence"] = summary.BeginSequence;
        json["nextSequence"] = summary.NextSequence;
        json["entryCount"] = summary.EntryCount;
        json["voidedEntries"] = summary.VoidedEntries;
        json["entriesByKind"] = kinds;
        json["incarnation"] = summary.Incarnation;
        json["registrations"] = new JsonArray([.. summary.Registrations.Select(r => (JsonNode?)r)]);
        json["versions"] = new JsonArray([.. summary.Versions.Select(v => (JsonNode?)v)]);
        json["unconsumed"] = unconsumed;
        json["pendingOut"] = pending;
        json["acknowledged"] = summary.Acknowledged;
        json["discarded"] = summary.Discarded;
        json["producers"] = producers;
        if (summary.Entries.Count > 0)
        {
            text.Add("log");
            var entries = new JsonArray();
            foreach (var (lsn, sequence, kind, length) in summary.Entries)
            {
                text.Add($"  LSN {lsn}: #{sequence} {kind}, {length} bytes");
                entries.Add(new JsonObject { ["lsn"] = lsn, ["sequence"] = sequence, ["kind"] = kind, ["length"] = length });
            }

            json["entries"] = entries;
        }

        return new CommandResult(text, json);
    }
}
