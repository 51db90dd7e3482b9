using System.Buffers.Binary;
using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Text;

namespace Dse.Darq;

/// <summary>
/// Pending OUT payloads beyond memory: an OUT message written by a step when <see cref="DarqOptions.MaxBufferedOutBytes"/>
/// is used up is <em>spilled</em>: the DARQ keeps its LSN, step, destination and length, and the delivery loop reads
/// the payload back from the log (once committed) each time it sends the message. Unlike spilled IN messages, nothing
/// orders them: the delivery loop sends a destination's messages in LSN order whether their payloads are buffered or not.
/// </summary>
public sealed partial class Darq
{
    /// <summary>Payload bytes of the pending OUT messages held in memory; under the gate, read without it.</summary>
    private long _bufferedOutBytes;

    /// <summary>Pending OUT messages whose payload is in the log only; under the gate, read without it.</summary>
    private int _spilledOutCount;

    /// <summary>How many times the pending OUT messages were rebuilt (restores); under the gate.</summary>
    private long _pendingOutRebuilds;

    /// <summary>The destination names of OUT entries read from the log (recovery, rebuilds), one string per name; under the gate.</summary>
    private readonly Dictionary<string, string> _destinationNames = new(StringComparer.Ordinal);

    /// <summary>
    /// Per destination with OUT messages pending: how many, and their LSNs oldest first (messages acknowledged out of
    /// order stay in the queue until they reach its front; its front is always pending). Under the gate.
    /// </summary>
    private readonly Dictionary<string, DestinationOut> _pendingOutByDestination = new(StringComparer.Ordinal);

    /// <summary>
    /// Set when a pending OUT message was added below one already added to its destination since the last rebuild (the
    /// messages are added in LSN order, so never expected): the queues are then not in order, and the earliest pending
    /// message of a destination is found by a scan. Under the gate.
    /// </summary>
    private bool _pendingOutUnordered;

    /// <summary>Failed reads in a row per spilled OUT message; guarded by itself.</summary>
    private readonly Dictionary<long, int> _outReadFailures = [];

    /// <summary>
    /// The payload bytes of the pending OUT messages held in memory for the delivery loop: at most
    /// <see cref="DarqOptions.MaxBufferedOutBytes"/>. Always 0 without <see cref="DarqOptions.Destinations"/>.
    /// </summary>
    public long BufferedOutBytes => Volatile.Read(ref _bufferedOutBytes);

    /// <summary>
    /// How many pending OUT messages wait in the log only: with <see cref="DarqOptions.Destinations"/> those beyond
    /// <see cref="DarqOptions.MaxBufferedOutBytes"/>, which the delivery loop reads back when it sends them; without, all.
    /// </summary>
    public int SpilledOutCount => Volatile.Read(ref _spilledOutCount);

    /// <summary>
    /// The destination name of an OUT entry read from the log, as one string per name: a recovered backlog of pending
    /// messages to one destination holds one copy of its name, not one per message. Under the gate.
    /// </summary>
    private string DestinationName(ReadOnlySpan<byte> utf8)
    {
        Span<char> chars = stackalloc char[DarqEntryFormat.MaxDestinationBytes];
        var name = chars[..Encoding.UTF8.GetChars(utf8, chars)];
        var names = _destinationNames.GetAlternateLookup<ReadOnlySpan<char>>();
        if (!names.TryGetValue(name, out string? known))
        {
            known = new string(name);
            names[name] = known;
        }

        return known;
    }

    /// <summary>
    /// Adds a pending OUT message written at <paramref name="lsn"/>: its payload is copied into memory when the instance
    /// delivers (<see cref="DarqOptions.Destinations"/>) and the budget has room, and is left in the log otherwise. Under the gate.
    /// </summary>
    private void AddPendingOut(long lsn, StepStart step, string destination, ReadOnlySpan<byte> payload)
    {
        PendingOut pending;
        if (_options.Destinations is not null && _bufferedOutBytes + payload.Length <= _options.MaxBufferedOutBytes)
        {
            pending = new PendingOut(step, destination, payload.ToArray());
            Volatile.Write(ref _bufferedOutBytes, _bufferedOutBytes + payload.Length);
        }
        else
        {
            pending = new PendingOut(step, destination, ReadOnlyMemory<byte>.Empty, payload.Length);
            Volatile.Write(ref _spilledOutCount, _spilledOutCount + 1);
        }

        _pendingOut.Add(lsn, pending);
        ref var byDestination = ref CollectionsMarshal.GetValueRefOrAddDefault(_pendingOutByDestination, destination, out _);
        byDestination ??= new DestinationOut();
        if (byDestination.Lsns.Count > 0 && lsn <= byDestination.Last)
        {
            Debug.Fail($"OUT message {lsn} to '{destination}' added after {byDestination.Last}.");
            _pendingOutUnordered = true;
        }

        byDestination.Lsns.Enqueue(lsn);
        byDestination.Last = lsn;
        byDestination.Count++;
    }

    /// <summary>Removes a pending OUT message (acknowledged, discarded); false when none is pending there. Under the gate.</summary>
    private bool RemovePendingOut(long lsn)
    {
        if (!_pendingOut.Remove(lsn, out var pending))
        {
            return false;
        }

        var byDestination = _pendingOutByDestination[pending.Destination];
        if (--byDestination.Count == 0)
        {
            _pendingOutByDestination.Remove(pending.Destination);
        }
        else if (byDestination.Lsns.Peek() == lsn)
        {
            // Keep the front pending: drop it, and the messages behind it acknowledged out of order.
            byDestination.Lsns.Dequeue();
            while (!_pendingOut.ContainsKey(byDestination.Lsns.Peek()))
            {
                byDestination.Lsns.Dequeue();
            }
        }

        if (pending.IsSpilled)
        {
            Volatile.Write(ref _spilledOutCount, _spilledOutCount - 1);
        }
        else
        {
            Volatile.Write(ref _bufferedOutBytes, _bufferedOutBytes - pending.Payload.Length);
        }

        return true;
    }

    /// <summary>Forgets every pending OUT message (a rebuild follows, which may make earlier messages pending again). Under the gate.</summary>
    private void ClearPendingOut()
    {
        _pendingOutRebuilds++;
        _pendingOut.Clear();
        _pendingOutByDestination.Clear();
        _pendingOutUnordered = false;
        Volatile.Write(ref _bufferedOutBytes, 0);
        Volatile.Write(ref _spilledOutCount, 0);
    }

    /// <summary>The LSN of the earliest OUT message to <paramref name="destination"/> still pending, or -1 when none is. Under the gate (tests call it on a quiet DARQ).</summary>
    internal long EarliestPendingOut(string destination)
    {
        if (!_pendingOutByDestination.TryGetValue(destination, out var byDestination))
        {
            return -1;
        }

        if (!_pendingOutUnordered)
        {
            return byDestination.Lsns.Peek();
        }

        foreach (var (lsn, pending) in _pendingOut)
        {
            if (string.Equals(pending.Destination, destination, StringComparison.Ordinal))
            {
                return lsn;
            }
        }

        return -1;
    }

    /// <summary>How many OUT messages to <paramref name="destination"/> are pending. Under the gate.</summary>
    private int PendingOutCountOf(string destination)
        => _pendingOutByDestination.TryGetValue(destination, out var byDestination) ? byDestination.Count : 0;

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
    private async ValueTask<(KeyValuePair<long, PendingOut>[] Run, Exception? Error)> LoadSpilledOutAsync(KeyValuePair<long, PendingOut>[] run,
        CancellationToken token)
    {
        int first = Array.FindIndex(run, r => r.Value.IsSpilled);
        if (first < 0)
        {
            return (run, null);
        }

        long firstLsn = run[first].Key;
        if (first == 0 && firstLsn >= _log.CommittedUntilAddress)
        {
            // Only under general speculation does the loop see uncommitted messages (the step that wrote them dirtied a
            // version, which LibDse persists, and that commits the log); a spilled one waits for its commit. Nothing is
            // committed here: a commit from a lane could outlive a crash of this instance.
            await WaitForCommitAsync(firstLsn + 1, token).ConfigureAwait(false);
        }

        long committed = _log.CommittedUntilAddress;
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

            reads.Add((i, ReadSpilledOutAsync(lsn, pending, token)));
        }

        try
        {
            await Task.WhenAll(reads.Select(r => r.Read)).ConfigureAwait(false);
        }
        catch (Exception) when (!token.IsCancellationRequested)
        {
            // Inspected per read below: the run ends at the first that failed.
        }

        // The run (TakeRun's own copy) takes the payloads read, up to the first read that failed.
        Exception? error = null;
        int loadedReads = 0;
        foreach (var (index, read) in reads)
        {
            if (!read.IsCompletedSuccessfully)
            {
                token.ThrowIfCancellationRequested();
                error = read.Exception?.InnerException ?? new IOException($"DARQ '{Name}': reading the spilled OUT message at LSN {run[index].Key} was cancelled.");
                end = index;
                break;
            }

            var (lsn, pending) = run[index];
            run[index] = new(lsn, pending with { Payload = await read.ConfigureAwait(false), SpilledLength = -1 });
            ForgetOutReadFailures(lsn);
            loadedReads++;
        }

        DarqInstrumentation.OutReadFromLog.Add(loadedReads, _tag);
        return (run[..end], error);
    }

    /// <summary>Reads one spilled OUT message's payload back from the committed log and checks the entry is that message.</summary>
    private async Task<ReadOnlyMemory<byte>> ReadSpilledOutAsync(long lsn, PendingOut pending, CancellationToken token)
    {
        int destinationBytes = Encoding.UTF8.GetByteCount(pending.Destination);
        int expected = DarqEntryFormat.OutLength(destinationBytes, pending.SpilledLength);
        byte[]? entry;
        int length;
        try
        {
            (entry, length) = await _log.ReadAsync(lsn, expected, token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            throw;
        }
        catch (Exception e) when (e is not ObjectDisposedException)
        {
            throw new IOException($"DARQ '{Name}' could not read the spilled OUT message at LSN {lsn} back from the log: {e.Message}", e);
        }

        if (entry is null)
        {
            // The storage read failed, FasterLog found its record header damaged, or the message is no longer pending
            // (discarded or voided, then truncated past), which the caller checks.
            throw new IOException($"DARQ '{Name}' could not read the spilled OUT message at LSN {lsn} back from the log (begin {_log.BeginAddress}, committed until {_log.CommittedUntilAddress}).");
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
            throw new DamagedOutEntryException(lsn, $"DARQ '{Name}': the spilled OUT message at LSN {lsn} is damaged in the log: {problem}.");
        }

        return entry.AsMemory(DarqEntryFormat.HeaderSize + 2 + destinationBytes, pending.SpilledLength);
    }

    /// <summary>Counts a failed read of the spilled OUT message at <paramref name="lsn"/>; returns the failures in a row.</summary>
    private int CountOutReadFailure(long lsn)
    {
        lock (_outReadFailures)
        {
            int failures = _outReadFailures.GetValueOrDefault(lsn) + 1;
            _outReadFailures[lsn] = failures;
            return failures;
        }
    }

    /// <summary>Forgets the failed reads of the message at <paramref name="lsn"/> (read, parked or gone).</summary>
    private void ForgetOutReadFailures(long lsn)
    {
        lock (_outReadFailures)
        {
            if (_outReadFailures.Count > 0)
            {
                _outReadFailures.Remove(lsn);
            }
        }
    }

    /// <summary>A spilled OUT message whose entry in the log is damaged: its destination is parked there (it can be discarded).</summary>
    private sealed class DamagedOutEntryException(long lsn, string message) : IOException(message)
    {
        public long Lsn { get; } = lsn;
    }

    /// <summary>The pending OUT messages to one destination (see <see cref="_pendingOutByDestination"/>).</summary>
    private sealed class DestinationOut
    {
        /// <summary>How many are pending.</summary>
        public int Count;

        /// <summary>The last LSN added.</summary>
        public long Last;

        /// <summary>Their LSNs, oldest first, with some acknowledged ones not yet skipped (never the front).</summary>
        public readonly Queue<long> Lsns = new();
    }
}
