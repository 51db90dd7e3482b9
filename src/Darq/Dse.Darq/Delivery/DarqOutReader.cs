using System.Buffers.Binary;
using System.Text;
using Dse.Storage;

namespace Dse.Darq;

/// <summary>
/// Reads the payloads of spilled OUT messages back from the committed log when delivery sends them, checks that each
/// entry is the message it should be, and counts failed reads in a row per message.
/// </summary>
internal sealed class DarqOutReader
{
    private readonly DarqCore _core;

    /// <summary>Failed reads in a row per spilled OUT message; guarded by itself.</summary>
    private readonly Dictionary<long, int> _failures = [];

    public DarqOutReader(DarqCore core)
    {
        _core = core;
    }

    /// <summary>
    /// The run with the payloads of its spilled messages read back from the log, up to the first that cannot be read:
    /// then the error comes with the messages before it (an empty run when it is the first). A spilled message not yet
    /// committed cannot be read either: the run ends before it, or, when it is the first, this waits for its commit.
    /// </summary>
    /// <returns>
    /// The loaded messages, and the error that stopped the run (null when none did): an <see cref="IOException"/> when a
    /// read failed (the lane backs off and tries again), a <see cref="DamagedOutEntryException"/> when the entry is
    /// damaged or is not the message.
    /// </returns>
    public async ValueTask<(KeyValuePair<long, PendingOut>[] Run, Exception? Error)> LoadAsync(KeyValuePair<long, PendingOut>[] run, CancellationToken token)
    {
        int first = Array.FindIndex(run, r => r.Value.IsSpilled);
        if (first < 0)
        {
            return (run, null);
        }

        long firstLsn = run[first].Key;
        if (first == 0 && firstLsn >= _core.Log.CommittedUntilAddress)
        {
            // Only under general speculation does delivery see uncommitted messages (the step that wrote them dirtied a
            // version, which LibDse persists, and that commits the log); a spilled one waits for its commit. Nothing is
            // committed here: a commit from a lane could outlive a crash of this instance.
            await _core.WaitForCommitAsync(firstLsn + 1, token).ConfigureAwait(false);
        }

        long committed = _core.Log.CommittedUntilAddress;
        int end = run.Length;
        var reads = new List<(int Index, Task<ReadOnlyMemory<byte>> Read)>();
        for (int i = first; i < run.Length; i++)
        {
            var (lsn, pending) = run[i];
            if (!pending.IsSpilled)
            {
                continue;
            }

            if (lsn >= committed)
            {
                end = i;
                break;
            }

            reads.Add((i, ReadAsync(lsn, pending, token)));
        }

        try
        {
            await Task.WhenAll(reads.Select(r => r.Read)).ConfigureAwait(false);
        }
        catch (Exception) when (!token.IsCancellationRequested)
        {
            // Inspected per read below: the run ends at the first that failed.
        }

        // The run (the caller's own copy) takes the payloads read, up to the first read that failed.
        Exception? error = null;
        int loaded = 0;
        foreach (var (index, read) in reads)
        {
            if (!read.IsCompletedSuccessfully)
            {
                token.ThrowIfCancellationRequested();
                error = read.Exception?.InnerException ?? new IOException($"DARQ '{_core.Name}': reading the spilled OUT message at LSN {run[index].Key} was cancelled.");
                end = index;
                break;
            }

            var (lsn, pending) = run[index];
            run[index] = new(lsn, pending with { Payload = await read.ConfigureAwait(false), SpilledLength = -1 });
            ForgetFailures(lsn);
            loaded++;
        }

        DarqInstrumentation.OutReadFromLog.Add(loaded, _core.Tag);
        return (run[..end], error);
    }

    /// <summary>Counts a failed read of the spilled OUT message at <paramref name="lsn"/>; returns the failures in a row.</summary>
    public int CountFailure(long lsn)
    {
        lock (_failures)
        {
            int failures = _failures.GetValueOrDefault(lsn) + 1;
            _failures[lsn] = failures;
            return failures;
        }
    }

    /// <summary>Forgets the failed reads of the message at <paramref name="lsn"/> (read, parked or gone).</summary>
    public void ForgetFailures(long lsn)
    {
        lock (_failures)
        {
            if (_failures.Count > 0)
            {
                _failures.Remove(lsn);
            }
        }
    }

    /// <summary>Reads one spilled OUT message's payload back from the committed log and checks the entry is that message.</summary>
    private async Task<ReadOnlyMemory<byte>> ReadAsync(long lsn, PendingOut pending, CancellationToken token)
    {
        int destinationBytes = Encoding.UTF8.GetByteCount(pending.Destination);
        int expected = DarqEntryFormat.OutLength(destinationBytes, pending.SpilledLength);
        byte[]? entry;
        int length;
        try
        {
            (entry, length) = await FasterLogs.ReadAsync(_core.Log, lsn, expected, token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            throw;
        }
        catch (Exception e) when (e is not ObjectDisposedException)
        {
            throw new IOException($"DARQ '{_core.Name}' could not read the spilled OUT message at LSN {lsn} back from the log: {(e as FasterLogReadException)?.InnerException?.Message ?? e.Message}", e);
        }

        if (entry is null)
        {
            // The storage read failed, FasterLog found its record header damaged, or the message is no longer pending
            // (discarded or voided, then truncated past), which the caller checks.
            throw new IOException(
                $"DARQ '{_core.Name}' could not read the spilled OUT message at LSN {lsn} back from the log (begin {_core.Log.BeginAddress}, committed until {_core.Log.CommittedUntilAddress}).");
        }

        var span = entry.AsSpan(0, length);
        string? problem = DarqEntryFormat.TryParse(span, out var kind, out _, out _);
        if (problem is null && kind != DarqEntryKind.Out)
        {
            problem = $"a {kind} entry where the OUT message was";
        }
        else if (problem is null && length != expected)
        {
            problem = $"an entry of {length} bytes where the OUT message to '{pending.Destination}' of {pending.SpilledLength} payload bytes takes {expected}";
        }

        if (problem is null)
        {
            var body = DarqEntryFormat.Body(span);
            int storedDestination = BinaryPrimitives.ReadUInt16LittleEndian(body);
            if (storedDestination != destinationBytes || Encoding.UTF8.GetString(body.Slice(2, storedDestination)) != pending.Destination)
            {
                problem = $"an OUT entry to another destination than '{pending.Destination}'";
            }
        }

        if (problem is not null)
        {
            throw new DamagedOutEntryException(lsn, $"DARQ '{_core.Name}': the spilled OUT message at LSN {lsn} is damaged in the log: {problem}.");
        }

        return entry.AsMemory(DarqEntryFormat.HeaderSize + 2 + destinationBytes, pending.SpilledLength);
    }
}
