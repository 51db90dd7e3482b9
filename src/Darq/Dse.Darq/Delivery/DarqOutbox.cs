using System.Diagnostics;
using System.Runtime.InteropServices;
using System.Text;

namespace Dse.Darq;

/// <summary>
/// The OUT messages not yet acknowledged by their destinations: by LSN, and per destination in LSN order, with their
/// payloads in memory within <see cref="DarqOptions.MaxBufferedOutBytes"/> (a message beyond it is <em>spilled</em>: its
/// payload stays in the log, and delivery reads it back each time it sends it).
/// </summary>
/// <remarks>
/// <para>Every member that reads or changes the outbox runs under the DARQ's gate, except the counts, which are
/// published with volatile writes.</para>
/// <para>Invariant: each destination's queue holds its pending LSNs oldest first (acknowledged ones may linger behind the
/// front, never at it), and its count is its number of pending messages. Messages are added in LSN order; should one
/// not be (never expected), <see cref="_unordered"/> makes lookups scan the map in LSN order instead.</para>
/// </remarks>
internal sealed class DarqOutbox
{
    private readonly DarqOptions _options;

    /// <summary>OUT entries not yet acknowledged, by LSN (all at or after the begin address).</summary>
    private readonly LsnOrderedMap<PendingOut> _pending = new();

    /// <summary>Per destination with OUT messages pending: how many, and their LSNs oldest first.</summary>
    private readonly Dictionary<string, DestinationQueue> _byDestination = new(StringComparer.Ordinal);

    /// <summary>The destination names of OUT entries read from the log (recovery, rebuilds), one string per name.</summary>
    private readonly Dictionary<string, string> _names = new(StringComparer.Ordinal);

    /// <summary>Set when a message was added below one already added to its destination since the last rebuild.</summary>
    private bool _unordered;

    private int _count;
    private long _bufferedBytes;
    private int _spilledCount;

    /// <summary>Completed and replaced whenever a message stops being pending, or the DARQ closes.</summary>
    private TaskCompletionSource _progress = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public DarqOutbox(DarqOptions options)
    {
        _options = options;
    }

    /// <summary>How many OUT messages are pending; read without the gate.</summary>
    public int Count => Volatile.Read(ref _count);

    /// <summary>Payload bytes of the pending OUT messages held in memory; read without the gate.</summary>
    public long BufferedBytes => Volatile.Read(ref _bufferedBytes);

    /// <summary>Pending OUT messages whose payload is in the log only; read without the gate.</summary>
    public int SpilledCount => Volatile.Read(ref _spilledCount);

    /// <summary>How many times the pending messages were rebuilt (restores): only a rebuild makes an earlier message pending again.</summary>
    public long Rebuilds { get; private set; }

    /// <summary>The pending messages in LSN order.</summary>
    public LsnOrderedMap<PendingOut> Messages => _pending;

    /// <summary>Completes when a message stops being pending (or on <see cref="PulseProgress"/>); take it under the gate, await it outside.</summary>
    public Task Progress => _progress.Task;

    public bool Contains(long lsn) => _pending.ContainsKey(lsn);

    public bool TryGet(long lsn, out PendingOut pending) => _pending.TryGetValue(lsn, out pending);

    /// <summary>
    /// The destination name of an OUT entry read from the log, as one string per name: a recovered backlog of pending
    /// messages to one destination holds one copy of its name, not one per message.
    /// </summary>
    public string InternName(ReadOnlySpan<byte> utf8)
    {
        Span<char> chars = stackalloc char[DarqEntryFormat.MaxDestinationBytes];
        var name = chars[..Encoding.UTF8.GetChars(utf8, chars)];
        var names = _names.GetAlternateLookup<ReadOnlySpan<char>>();
        if (!names.TryGetValue(name, out string? known))
        {
            known = new string(name);
            names[name] = known;
        }

        return known;
    }

    /// <summary>
    /// Adds a pending OUT message written at <paramref name="lsn"/>: its payload is copied into memory when the DARQ
    /// delivers (<see cref="DarqOptions.Destinations"/>) and the budget has room, and is left in the log otherwise.
    /// </summary>
    public void Add(long lsn, StepStart step, string destination, ReadOnlySpan<byte> payload)
    {
        PendingOut pending;
        if (_options.Destinations is not null && _bufferedBytes + payload.Length <= _options.MaxBufferedOutBytes)
        {
            pending = new PendingOut(step, destination, payload.ToArray());
            Volatile.Write(ref _bufferedBytes, _bufferedBytes + payload.Length);
        }
        else
        {
            pending = new PendingOut(step, destination, ReadOnlyMemory<byte>.Empty, payload.Length);
            Volatile.Write(ref _spilledCount, _spilledCount + 1);
        }

        _pending.Add(lsn, pending);
        Volatile.Write(ref _count, _pending.Count);
        ref var queue = ref CollectionsMarshal.GetValueRefOrAddDefault(_byDestination, destination, out _);
        queue ??= new DestinationQueue();
        if (queue.Lsns.Count > 0 && lsn <= queue.Last)
        {
            Debug.Fail($"OUT message {lsn} to '{destination}' added after {queue.Last}.");
            _unordered = true;
        }

        queue.Lsns.Enqueue(lsn);
        queue.Last = lsn;
        queue.Count++;
    }

    /// <summary>Removes a pending OUT message (acknowledged, discarded); false when none is pending there.</summary>
    public bool Remove(long lsn)
    {
        if (!_pending.Remove(lsn, out var pending))
        {
            return false;
        }

        Volatile.Write(ref _count, _pending.Count);
        var queue = _byDestination[pending.Destination];
        if (--queue.Count == 0)
        {
            _byDestination.Remove(pending.Destination);
        }
        else if (queue.Lsns.Peek() == lsn)
        {
            // Keep the front pending: drop it, and the messages behind it acknowledged out of order.
            queue.Lsns.Dequeue();
            while (!_pending.ContainsKey(queue.Lsns.Peek()))
            {
                queue.Lsns.Dequeue();
            }
        }

        if (pending.IsSpilled)
        {
            Volatile.Write(ref _spilledCount, _spilledCount - 1);
        }
        else
        {
            Volatile.Write(ref _bufferedBytes, _bufferedBytes - pending.Payload.Length);
        }

        return true;
    }

    /// <summary>Forgets every pending OUT message (a rebuild follows, which may make earlier messages pending again).</summary>
    public void Clear()
    {
        Rebuilds++;
        _pending.Clear();
        _byDestination.Clear();
        _unordered = false;
        Volatile.Write(ref _count, 0);
        Volatile.Write(ref _bufferedBytes, 0);
        Volatile.Write(ref _spilledCount, 0);
    }

    /// <summary>The LSN of the earliest OUT message to <paramref name="destination"/> still pending, or -1 when none is.</summary>
    public long Earliest(string destination)
    {
        if (!_byDestination.TryGetValue(destination, out var queue))
        {
            return -1;
        }

        if (!_unordered)
        {
            return queue.Lsns.Peek();
        }

        foreach (var (lsn, pending) in _pending)
        {
            if (string.Equals(pending.Destination, destination, StringComparison.Ordinal))
            {
                return lsn;
            }
        }

        return -1;
    }

    /// <summary>How many OUT messages to <paramref name="destination"/> are pending.</summary>
    public int CountOf(string destination) => _byDestination.TryGetValue(destination, out var queue) ? queue.Count : 0;

    /// <summary>
    /// Collects the deliverable messages (those below <paramref name="deliverableBelow"/>): for each destination its
    /// earliest pending messages in LSN order, at most <paramref name="limit"/> of them, the destinations oldest pending
    /// message first.
    /// </summary>
    /// <remarks>
    /// Only the head of each destination's backlog is taken: a destination that is down while its sender keeps stepping
    /// can hold millions of pending messages, and copying them all on every pass would hold the gate, and every enqueue
    /// and step behind it, for milliseconds at a time.
    /// </remarks>
    public void Collect(List<KeyValuePair<long, PendingOut>> batch, long deliverableBelow, int limit)
    {
        if (_unordered)
        {
            // The per-destination queues are not in LSN order (never expected): one scan in LSN order instead.
            var taken = new Dictionary<string, int>(StringComparer.Ordinal);
            foreach (var entry in _pending)
            {
                if (entry.Key >= deliverableBelow)
                {
                    break;
                }

                ref int count = ref CollectionsMarshal.GetValueRefOrAddDefault(taken, entry.Value.Destination, out _);
                if (count++ < limit)
                {
                    batch.Add(entry);
                }
            }

            return;
        }

        var heads = new List<(long First, DestinationQueue Queue)>(_byDestination.Count);
        foreach (var queue in _byDestination.Values)
        {
            long first = queue.Lsns.Peek();
            if (first < deliverableBelow)
            {
                heads.Add((first, queue));
            }
        }

        heads.Sort(static (x, y) => x.First.CompareTo(y.First));
        foreach (var (_, queue) in heads)
        {
            int count = 0;
            foreach (long lsn in queue.Lsns)
            {
                if (count == limit || lsn >= deliverableBelow)
                {
                    break;
                }

                // Acknowledged out of order, not yet dropped from the queue: skipped.
                if (_pending.TryGetValue(lsn, out var pending))
                {
                    batch.Add(new(lsn, pending));
                    count++;
                }
            }
        }
    }

    /// <summary>
    /// Adds to <paramref name="batch"/> the next pending messages to <paramref name="destination"/> after
    /// <paramref name="after"/> and below <paramref name="deliverableBelow"/>, in LSN order, at most <paramref name="limit"/>.
    /// </summary>
    public void CollectFor(string destination, long after, long deliverableBelow, int limit, List<KeyValuePair<long, PendingOut>> batch)
    {
        if (!_byDestination.TryGetValue(destination, out var queue))
        {
            return;
        }

        if (_unordered)
        {
            foreach (var entry in _pending.From(after + 1))
            {
                if (batch.Count == limit || entry.Key >= deliverableBelow)
                {
                    break;
                }

                if (string.Equals(entry.Value.Destination, destination, StringComparison.Ordinal))
                {
                    batch.Add(entry);
                }
            }

            return;
        }

        int taken = 0;
        foreach (long lsn in queue.Lsns)
        {
            if (lsn <= after)
            {
                continue;
            }

            if (taken == limit || lsn >= deliverableBelow)
            {
                break;
            }

            if (_pending.TryGetValue(lsn, out var pending))
            {
                batch.Add(new(lsn, pending));
                taken++;
            }
        }
    }

    /// <summary>Wakes every waiter of <see cref="Progress"/> (a new signal for the next wait first).</summary>
    public void PulseProgress()
    {
        var done = _progress;
        _progress = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        done.TrySetResult();
    }

    /// <summary>The pending OUT messages to one destination.</summary>
    private sealed class DestinationQueue
    {
        /// <summary>How many are pending.</summary>
        public int Count;

        /// <summary>The last LSN added.</summary>
        public long Last;

        /// <summary>Their LSNs, oldest first, with some acknowledged ones not yet skipped (never the front).</summary>
        public readonly Queue<long> Lsns = new();
    }
}
