using System.Buffers.Binary;

namespace Dse.Cli;

/// <summary>
/// <c>dse log inspect PATH</c>: a coordinator journal (a file log, docs/coordinator-log-format.md) or a
/// <c>SnapshotLog</c> over local files (docs/storage-format.md), told apart by their magic numbers; read-only.
/// </summary>
internal static class LogInspectCommand
{
    private const uint JournalMagic = 0x6345_5344; // "DSEc"
    private const uint SnapshotMagic = 0x7345_5344; // "DSEs"

    public const string Usage = """
        Usage: dse log inspect PATH [--segment-size SIZE] [--json]

        Reads a coordinator journal or a snapshot log without opening it and without changing a byte, and prints its
        records and a summary. Which it is follows from the first bytes: "DSEc" a coordinator journal (the host's
        --log file:PATH), "DSEs" a SnapshotLog.

          PATH                 A coordinator journal file; or a snapshot log's path prefix (its files are PATH.0,
                               PATH.1, ...) or its first segment file PATH.0.
          --segment-size SIZE  A snapshot log's SnapshotLogOptions.SegmentSize. Default 1GB.
          --json               Print one JSON document instead of text.
        """;

    public static CommandResult Run(IReadOnlyList<string> args)
    {
        var arguments = CliArguments.Parse("log inspect", args, positionalCount: 1, options: ["--segment-size"]);
        string path = arguments.Positional[0];
        long segmentSize = arguments.PowerOfTwoSize("--segment-size", 1L << 30, 4096);
        if (Directory.Exists(path))
        {
            throw new CliFailureException($"log inspect: {CliArguments.Shown(path)} is a directory; pass a coordinator journal file or a snapshot log's path (dse darq inspect reads DARQ directories).");
        }

        if (!File.Exists(path))
        {
            return File.Exists(path + ".0")
                ? SnapshotLogReader.Read(path, segmentSize)
                : throw new CliFailureException($"log inspect: no file {CliArguments.Shown(path)} (nor a snapshot log segment {CliArguments.Shown(path + ".0")}).");
        }

        byte[] image = ReadAll(path);
        if (image.Length < 4)
        {
            throw new CliFailureException(image.Length == 0
                ? $"log inspect: {CliArguments.Shown(path)} is empty: no records."
                : $"log inspect: {CliArguments.Shown(path)} holds {image.Length} bytes, too few for a coordinator journal or a snapshot log.");
        }

        uint magic = BinaryPrimitives.ReadUInt32LittleEndian(image);
        return magic switch
        {
            JournalMagic => CoordinatorJournalReader.Read(path, image),
            SnapshotMagic => SnapshotLogReader.Read(SnapshotPrefix(path), segmentSize),
            _ => throw new CliFailureException(
                $"log inspect: {CliArguments.Shown(path)} is neither a coordinator journal nor a snapshot log (it starts with 0x{magic:X8}, not \"DSEc\" or \"DSEs\")."),
        };
    }

    /// <summary>A snapshot log's first segment file is PREFIX.0; anything else names the prefix itself.</summary>
    private static string SnapshotPrefix(string path) => path.EndsWith(".0", StringComparison.Ordinal) ? path[..^2] : path;

    private static byte[] ReadAll(string path)
    {
        try
        {
            // A running coordinator host holds its journal with an exclusive lock, which a reader cannot share.
            using var stream = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite);
            byte[] image = new byte[stream.Length];
            stream.ReadExactly(image);
            return image;
        }
        catch (IOException e) when (e is not FileNotFoundException and not EndOfStreamException)
        {
            throw new CliFailureException($"log inspect: {CliArguments.Shown(path)} cannot be read, it is held by a running process (a coordinator host locks its journal); stop it, or inspect a copy: {e.Message}", e);
        }
        catch (UnauthorizedAccessException e)
        {
            throw new CliFailureException($"log inspect: {CliArguments.Shown(path)} cannot be read: {e.Message}", e);
        }
    }
}
