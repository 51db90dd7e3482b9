using System.Buffers.Binary;
using System.Text;
using Dse.Darq;
using Dse.Storage;
using FASTER.core;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Cli;

/// <summary>
/// Reads a DARQ's newest commit and its committed, untruncated log without opening the DARQ: no fences taken, no
/// recovery commit, nothing written (docs/darq-format.md). Entries a rollback voided are counted and skipped, as recovery
/// skips them; an entry that does not parse is reported with its LSN.
/// </summary>
internal static class DarqLogReader
{
    /// <summary>Scans the DARQ of <paramref name="files"/>.</summary>
    /// <param name="files">Its files.</param>
    /// <param name="pageSize">The page size it was opened with (<c>DarqOptions.PageSize</c>).</param>
    /// <param name="segmentSize">The segment size it was opened with (<c>DarqOptions.SegmentSize</c>).</param>
    /// <param name="listEntries">Whether to list every entry.</param>
    /// <param name="cancellationToken">Cancels the scan.</param>
    /// <exception cref="CliFailureException">The commit records or the log cannot be read, or an entry is corrupt.</exception>
    public static async Task<DarqLogSummary> ReadAsync(DarqLogFiles files, long pageSize, long segmentSize, bool listEntries, CancellationToken cancellationToken)
    {
        var logDevice = DseDevices.CreateLocalFile(files.LogPath);
        DarqCommitManager? commitManager = null;
        try
        {
            commitManager = await OpenCommitManagerAsync(files).ConfigureAwait(false);
            long commit = commitManager.LatestCommit;
            if (commit < 0)
            {
                return new DarqLogSummary();
            }

            using var log = new FasterLog(FasterLogs.Settings(logDevice, commitManager, pageSize, 4 * pageSize, segmentSize), (Microsoft.Extensions.Logging.ILogger?)null);
            DarqCommitState state;
            try
            {
                log.Recover(-1);
                var cookie = log.RecoveredCookie ?? throw new InvalidDataException($"commit {commit} carries no DARQ state (no commit cookie)");
                state = DarqCommitState.Deserialize(cookie, $"commit {commit}");
            }
            catch (Exception e) when (e is not OperationCanceledException)
            {
                throw new CliFailureException($"darq inspect: DARQ '{files.Name}': its commit {commit} cannot be read: {OneLine(e.Message)}{SizeHint}", e);
            }

            var summary = new DarqLogSummary
            {
                Commit = commit,
                General = state.General,
                BeginAddress = log.BeginAddress,
                TailAddress = log.TailAddress,
                BeginSequence = state.BeginSequence,
                NextSequence = state.NextSequence,
                Incarnation = state.Incarnation,
                VoidedRanges = state.Voided,
                Versions = [.. state.Versions.Select(v => v.Version)],
                Producers = new SortedDictionary<long, long>(state.Producers),
            };
            await ScanAsync(files, log, summary, listEntries, cancellationToken).ConfigureAwait(false);
            return summary;
        }
        finally
        {
            // The commit manager owns (and disposes) the commit device; FasterLog disposes neither device.
            commitManager?.Dispose();
            logDevice.Dispose();
        }
    }

    private const string SizeHint = " (if the DARQ was opened with another PageSize or SegmentSize, pass them with --page-size and --segment-size)";

    /// <summary>Opens the commit records read-only, with the slot size they were written with.</summary>
    private static async Task<DarqCommitManager> OpenCommitManagerAsync(DarqLogFiles files)
    {
        int producers = new DarqOptions().MaxProducers;
        try
        {
            return await DarqCommitManager.OpenAsync(DseDevices.CreateLocalFile(files.CommitPath), DarqStorage.CommitMetadataCapacity(producers),
                DarqStorage.LegacyCommitMetadataCapacity(producers), ownsDevice: true, NullLogger.Instance, files.Name).ConfigureAwait(false);
        }
        catch (DarqCommitSlotSizeMismatchException mismatch)
        {
            // Another MaxProducers sized the slots; the record says how large they are, which is all reading needs.
            return await DarqCommitManager.OpenAsync(DseDevices.CreateLocalFile(files.CommitPath), mismatch.RecordedSlotSize - DarqCommitManager.HeaderSize, 0,
                ownsDevice: true, NullLogger.Instance, files.Name).ConfigureAwait(false);
        }
    }

    private static async Task ScanAsync(DarqLogFiles files, FasterLog log, DarqLogSummary summary, bool listEntries, CancellationToken cancellationToken)
    {
        long expected = summary.BeginSequence;
        long lastAddress = summary.BeginAddress;
        try
        {
            await foreach (var read in FasterLogs.ScanAsync(log, summary.BeginAddress, summary.TailAddress, cancellationToken).ConfigureAwait(false))
            {
                lastAddress = read.Address;
                if (IsVoided(summary.VoidedRanges, read.Address))
                {
                    summary.VoidedEntries++;
                    continue;
                }

                var entry = read.Span;
                string? problem = DarqEntryFormat.TryParse(entry, out var kind, out ushort flags, out long sequence);
                if (problem is not null)
                {
                    throw Corrupt(files, read.Address, problem + SizeHint);
                }

                if (sequence != expected)
                {
                    throw Corrupt(files, read.Address, $"entry sequence {sequence}, expected {expected}");
                }

                expected++;
                string name = KindName(kind, flags);
                var count = summary.EntriesByKind.GetValueOrDefault((int)kind, (KindName(kind, 0), 0));
                summary.EntriesByKind[(int)kind] = (count.Item1, count.Item2 + 1);
                if (listEntries)
                {
                    summary.Entries.Add((read.Address, sequence, name, entry.Length));
                }

                Apply(files, summary, kind, flags, DarqEntryFormat.Body(entry), read.Address);
            }
        }
        catch (FasterLogReadException e)
        {
            throw Corrupt(files, e.Address, $"FasterLog cannot read the entry: {e.InnerException?.Message ?? e.Message}{SizeHint}");
        }

        if (expected != summary.NextSequence)
        {
            throw Corrupt(files, lastAddress, $"the log holds entries up to sequence {expected - 1} but the commit records {summary.NextSequence - 1}{SizeHint}");
        }
    }

    private static void Apply(DarqLogFiles files, DarqLogSummary summary, DarqEntryKind kind, ushort flags, ReadOnlySpan<byte> body, long address)
    {
        switch (kind)
        {
            case DarqEntryKind.In:
                bool dedup = (flags & DarqEntryFormat.HasDedupFlag) != 0;
                summary.Unconsumed[address] = new UnconsumedMessage("IN", body.Length - 16,
                    dedup ? BinaryPrimitives.ReadInt64LittleEndian(body) : null, dedup ? BinaryPrimitives.ReadInt64LittleEndian(body[8..]) : null, null);
                break;
            case DarqEntryKind.Self when (flags & DarqEntryFormat.ActivityFlag) != 0:
                int nameLength = body.Length >= 2 ? BinaryPrimitives.ReadUInt16LittleEndian(body) : -1;
                if (nameLength < 1 || body.Length < 2 + nameLength)
                {
                    throw Corrupt(files, address, $"an activity with a name of {nameLength} bytes in a body of {body.Length}");
                }

                summary.Unconsumed[address] = new UnconsumedMessage("ACTIVITY", body.Length - 2 - nameLength, null, null, Encoding.UTF8.GetString(body.Slice(2, nameLength)));
                break;
            case DarqEntryKind.Self:
                summary.Unconsumed[address] = new UnconsumedMessage("SELF", body.Length, null, null, null);
                break;
            case DarqEntryKind.Out:
                int destinationLength = BinaryPrimitives.ReadUInt16LittleEndian(body);
                if (destinationLength is 0 or > DarqEntryFormat.MaxDestinationBytes || body.Length < 2 + destinationLength)
                {
                    throw Corrupt(files, address, $"an OUT entry with a destination of {destinationLength} bytes in a body of {body.Length}");
                }

                summary.PendingOut[address] = (Encoding.UTF8.GetString(body.Slice(2, destinationLength)), body.Length - 2 - destinationLength);
                break;
            case DarqEntryKind.Ack:
                int acked = BinaryPrimitives.ReadInt32LittleEndian(body);
                if (acked < 0 || body.Length != 8 + (8L * acked))
                {
                    throw Corrupt(files, address, $"an ACK entry claims {acked} LSNs in a body of {body.Length} bytes");
                }

                for (int i = 0; i < acked; i++)
                {
                    summary.PendingOut.Remove(BinaryPrimitives.ReadInt64LittleEndian(body[(8 + (8 * i))..]));
                }

                if ((flags & DarqEntryFormat.DiscardedFlag) != 0)
                {
                    summary.Discarded += acked;
                }
                else
                {
                    summary.Acknowledged += acked;
                }

                break;
            case DarqEntryKind.Completion or DarqEntryKind.Checkpoint:
                // Both list what they consume (a checkpoint: the SELF messages it replaces) after incarnation and entry count.
                int consumed = BinaryPrimitives.ReadInt32LittleEndian(body[12..]);
                if (consumed < 0 || body.Length != 16 + (8L * consumed))
                {
                    throw Corrupt(files, address, $"a {KindName(kind, 0)} record lists {consumed} LSNs in a body of {body.Length} bytes");
                }

                for (int i = 0; i < consumed; i++)
                {
                    summary.Unconsumed.Remove(BinaryPrimitives.ReadInt64LittleEndian(body[(16 + (8 * i))..]));
                }

                break;
            case DarqEntryKind.Register:
                summary.Registrations.Add(BinaryPrimitives.ReadInt64LittleEndian(body));
                break;
            default:
                // ROLLBACK: the range it voids is in the commit's voided ranges, which the scan skips.
                break;
        }
    }

    private static bool IsVoided(List<(long From, long Until)> ranges, long address)
    {
        foreach (var (from, until) in ranges)
        {
            if (address >= from && address < until)
            {
                return true;
            }
        }

        return false;
    }

    private static string KindName(DarqEntryKind kind, ushort flags) => kind switch
    {
        DarqEntryKind.Self when (flags & DarqEntryFormat.ActivityFlag) != 0 => "ACTIVITY",
        _ => kind.ToString().ToUpperInvariant(),
    };

    private static CliFailureException Corrupt(DarqLogFiles files, long address, string problem) =>
        new($"darq inspect: DARQ '{files.Name}' is corrupt at LSN {address}: {OneLine(problem)}");

    private static string OneLine(string message) => message.ReplaceLineEndings(" ");
}
