using System.Text.Json.Nodes;
using Dse.Storage;

namespace Dse.Cli;

/// <summary>
/// A <c>SnapshotLog</c> over local files <c>{prefix}.{n}</c> (docs/storage-format.md, "Snapshot log"), scanned as its
/// recovery scans it, from the files, read-only: records, markers, the keys the markers leave, and a torn tail.
/// </summary>
internal static class SnapshotLogReader
{
    /// <summary>Every device of this repository writes snapshot logs with 512-byte sectors.</summary>
    private const int SectorSize = 512;

    public static CommandResult Read(string prefix, long segmentSize)
    {
        using var segments = new SegmentFiles(prefix, segmentSize);
        var text = new List<string>();
        var records = new JsonArray();
        var lines = new List<string>();
        var live = new List<(ulong Key, ulong Sequence)>();
        var counts = new Dictionary<string, int>(StringComparer.Ordinal) { ["data"] = 0, ["drop-after"] = 0, ["truncate-before"] = 0 };
        long position = 0;
        ulong sequence = 0;
        string? torn = null;
        byte[] header = new byte[SnapshotRecordFormat.HeaderSize];
        while (true)
        {
            segments.Read(position, header);
            var status = SnapshotRecordFormat.ParseHeader(header, position, sequence, out var record, out string problem);
            if (status == SnapshotRecordFormat.HeaderStatus.Empty)
            {
                break;
            }

            if (status == SnapshotRecordFormat.HeaderStatus.Invalid)
            {
                throw new CliFailureException($"log inspect: snapshot log {CliArguments.Shown(prefix)} is corrupt at address {position}: {problem} (was the segment size {segmentSize}? pass --segment-size).");
            }

            long length = SnapshotRecordFormat.RecordLength(record.PayloadLength, SectorSize);
            byte[] payload = new byte[record.PayloadLength];
            segments.Read(position + SnapshotRecordFormat.HeaderSize, payload);
            if (!SnapshotRecordFormat.PayloadMatches(record, payload))
            {
                segments.Read(position + length, header);
                if (SnapshotRecordFormat.ParseHeader(header, position + length, sequence + 1, out _, out _) == SnapshotRecordFormat.HeaderStatus.Valid)
                {
                    throw new CliFailureException($"log inspect: snapshot log {CliArguments.Shown(prefix)} is corrupt at address {position}: the payload of record {sequence} fails its checksum and a later record exists.");
                }

                torn = $"record {sequence} at address {position} ({record.PayloadLength} payload bytes) is incomplete: a torn tail, which the log drops when it opens";
                break;
            }

            string kind = record.Kind switch
            {
                SnapshotRecordKind.Data => "data",
                SnapshotRecordKind.DropAfter => "drop-after",
                _ => "truncate-before",
            };
            counts[kind]++;
            switch (record.Kind)
            {
                case SnapshotRecordKind.Data:
                    live.Add((record.Key, record.Sequence));
                    break;
                case SnapshotRecordKind.DropAfter:
                    live.RemoveAll(r => r.Key > record.Key);
                    break;
                default:
                    live.RemoveAll(r => r.Key < record.Key);
                    break;
            }

            records.Add(new JsonObject { ["sequence"] = record.Sequence, ["address"] = position, ["kind"] = kind, ["key"] = record.Key, ["length"] = record.PayloadLength });
            lines.Add($"  #{record.Sequence} @{position}: {kind} key {record.Key}{(record.Kind == SnapshotRecordKind.Data ? $", {record.PayloadLength} bytes" : string.Empty)}");
            position += length;
            sequence++;
        }

        text.Add($"snapshot log {prefix}");
        text.Add($"records      {sequence} (data {counts["data"]}, drop-after {counts["drop-after"]}, truncate-before {counts["truncate-before"]}); tail at address {position}");
        text.Add($"live keys    {(live.Count == 0 ? "none" : string.Join(", ", live.Select(r => r.Key)))}");
        if (torn is not null)
        {
            text.Add($"torn tail    {torn}");
        }

        text.AddRange(lines);
        var json = new JsonObject
        {
            ["kind"] = "snapshot-log",
            ["path"] = prefix,
            ["tail"] = position,
            ["liveKeys"] = new JsonArray([.. live.Select(r => (JsonNode?)r.Key)]),
            ["tornTail"] = torn,
            ["records"] = records,
        };
        return new CommandResult(text, json);
    }

    /// <summary>The segment files of a local file device, read as one address space; what no file holds reads as zeros.</summary>
    private sealed class SegmentFiles(string prefix, long segmentSize) : IDisposable
    {
        private readonly Dictionary<long, FileStream?> _files = [];

        public void Read(long address, Span<byte> destination)
        {
            destination.Clear();
            while (!destination.IsEmpty)
            {
                long segment = address / segmentSize;
                long offset = address % segmentSize;
                int length = (int)Math.Min(destination.Length, segmentSize - offset);
                var file = Open(segment);
                if (file is not null && offset < file.Length)
                {
                    file.Position = offset;
                    file.ReadAtLeast(destination[..length], (int)Math.Min(length, file.Length - offset), throwOnEndOfStream: false);
                }

                destination = destination[length..];
                address += length;
            }
        }

        private FileStream? Open(long segment)
        {
            if (!_files.TryGetValue(segment, out var file))
            {
                string path = $"{prefix}.{segment}";
                file = File.Exists(path) ? new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite) : null;
                _files[segment] = file;
            }

            return file;
        }

        public void Dispose()
        {
            foreach (var file in _files.Values)
            {
                file?.Dispose();
            }
        }
    }
}
