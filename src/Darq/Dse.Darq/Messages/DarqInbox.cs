using System.Diagnostics;

namespace Dse.Darq;

/// <summary>
/// The unconsumed IN and SELF messages by LSN, the consumed LSNs the log still holds, and the counts read without the
/// gate: unconsumed messages, plain SELF messages and their bytes, and the IN backlog's buffered bytes and spilled
/// messages (an IN message beyond <see cref="DarqOptions.MaxBufferedInBytes"/> is kept without its payload, which the
/// feed reads back from the log).
/// </summary>
/// <remarks>
/// <para>Every member that changes the inbox runs under the DARQ's gate; the counts are published with volatile writes.</para>
/// <para>Invariant: in LSN order every buffered unconsumed IN message precedes every spilled one, because a message is
/// buffered only while none is spilled (<see cref="MayBufferIn"/>) and the feed buffers spilled ones oldest first. With a
/// processor registered, every buffered IN message has been handed to it, so the processor's stream stays in LSN order
/// with no gap.</para>
/// </remarks>
internal sealed class DarqInbox
{
    private readonly DarqOptions _options;
    private readonly Action _feedLow;

    /// <summary>Unconsumed IN and SELF messages by LSN (all at or after the begin address).</summary>
    private readonly LsnOrderedMap<PendingMessage> _unconsumed = new();

    /// <summary>Consumed LSNs at or after the begin address, to tell "already consumed" from "unknown".</summary>
    private readonly ConsumedLsns _consumed = new();

    private int _count;
    private int _selfCount;
    private long _selfBytes;
    private long _bufferedInBytes;
    private int _spilledInCount;

    /// <summary>At or below the LSN of the oldest spilled IN message (while any is).</summary>
    private long _feedFrom;

    /// <summary>Creates the inbox; <c>feedLow</c> is called when a consumed IN message leaves the buffered bytes at the feed's low-water mark while some are spilled.</summary>
    public DarqInbox(DarqOptions options, Action feedLow)
    {
        _options = options;
        _feedLow = feedLow;
    }

    /// <summary>The number of unconsumed messages; read without the gate.</summary>
    public int Count => Volatile.Read(ref _count);

    /// <summary>The number of unconsumed plain SELF messages (activities excluded); read without the gate.</summary>
    public int SelfCount => Volatile.Read(ref _selfCount);

    /// <summary>The sum of the payload lengths of the unconsumed plain SELF messages; read without the gate.</summary>
    public long SelfBytes => Volatile.Read(ref _selfBytes);

    /// <summary>Payload bytes of the buffered unconsumed IN messages; read without the gate.</summary>
    public long BufferedInBytes => Volatile.Read(ref _bufferedInBytes);

    /// <summary>Unconsumed IN messages whose payload is in the log only; read without the gate.</summary>
    public int SpilledInCount => Volatile.Read(ref _spilledInCount);

    /// <summary>At or below the LSN of the oldest spilled IN message (while any is).</summary>
    public long FeedFrom => _feedFrom;

    /// <summary>The unconsumed messages in LSN order.</summary>
    public LsnOrderedMap<PendingMessage> Messages => _unconsumed;

    public bool Contains(long lsn) => _unconsumed.ContainsKey(lsn);

    public bool TryGet(long lsn, out PendingMessage message) => _unconsumed.TryGetValue(lsn, out message);

    /// <summary>Whether <paramref name="lsn"/> was consumed (or truncated after it was), as opposed to never known.</summary>
    public bool WasConsumed(long lsn, long beginAddress) => _consumed.Contains(lsn) || (lsn >= 0 && lsn < beginAddress);

    /// <summary>Whether an IN message of <paramref name="length"/> payload bytes may be buffered: the budget allows it and nothing older is spilled.</summary>
    public bool MayBufferIn(int length) => _spilledInCount == 0 && _bufferedInBytes + length <= _options.MaxBufferedInBytes;

    /// <summary>
    /// Whether the buffered IN bytes fell to the low-water mark (half the budget), below which the feed reads the next
    /// spilled messages back: it reads in chunks of up to half the budget, not a message at a time as each is consumed.
    /// </summary>
    public bool IsFeedLow => _bufferedInBytes <= _options.MaxBufferedInBytes / 2;

    /// <summary>Adds an unconsumed message and counts it.</summary>
    public void Add(long lsn, in PendingMessage message)
    {
        _unconsumed.Add(lsn, message);
        Volatile.Write(ref _count, _unconsumed.Count);
        if (message.Kind == DarqMessageKind.In)
        {
            if (message.IsSpilled)
            {
                if (_spilledInCount == 0 || lsn < _feedFrom)
                {
                    _feedFrom = lsn;
                }

                Volatile.Write(ref _spilledInCount, _spilledInCount + 1);
            }
            else
            {
                Volatile.Write(ref _bufferedInBytes, _bufferedInBytes + message.Payload.Length);
            }
        }
        else if (message.Kind == DarqMessageKind.Self)
        {
            Volatile.Write(ref _selfCount, _selfCount + 1);
            Volatile.Write(ref _selfBytes, _selfBytes + message.Payload.Length);
        }
    }

    /// <summary>Consumes a message: removes it (uncounting it) and remembers its LSN as consumed.</summary>
    /// <returns>Whether the message was unconsumed.</returns>
    public bool Consume(long lsn)
    {
        if (!Remove(lsn))
        {
            return false;
        }

        _consumed.Add(lsn);
        return true;
    }

    /// <summary>Removes an unconsumed message (consumed or replaced), uncounting it.</summary>
    /// <returns>Whether the message was unconsumed.</returns>
    public bool Remove(long lsn)
    {
        if (!_unconsumed.Remove(lsn, out var message))
        {
            return false;
        }

        Volatile.Write(ref _count, _unconsumed.Count);
        if (message.Kind == DarqMessageKind.In)
        {
            if (message.IsSpilled)
            {
                Volatile.Write(ref _spilledInCount, _spilledInCount - 1);
            }
            else
            {
                Volatile.Write(ref _bufferedInBytes, _bufferedInBytes - message.Payload.Length);
                if (_spilledInCount > 0 && IsFeedLow)
                {
                    // Room for the feed.
                    _feedLow();
                }
            }
        }
        else if (message.Kind == DarqMessageKind.Self)
        {
            Volatile.Write(ref _selfCount, _selfCount - 1);
            Volatile.Write(ref _selfBytes, _selfBytes - message.Payload.Length);
        }

        return true;
    }

    /// <summary>A spilled IN message was read back: it is buffered now with <paramref name="payload"/>.</summary>
    public PendingMessage Buffer(long lsn, PendingMessage spilled, ReadOnlyMemory<byte> payload)
    {
        Debug.Assert(spilled.IsSpilled, "only a spilled message is buffered");
        var buffered = spilled with { Payload = payload, SpilledLength = -1 };
        _unconsumed[lsn] = buffered;
        Volatile.Write(ref _spilledInCount, _spilledInCount - 1);
        Volatile.Write(ref _bufferedInBytes, _bufferedInBytes + payload.Length);
        return buffered;
    }

    /// <summary>The feed handed over the spilled messages before <paramref name="lsn"/>: the oldest spilled one is at or after it (never moves back).</summary>
    public void AdvanceFeedFrom(long lsn) => _feedFrom = Math.Max(_feedFrom, lsn);

    /// <summary>Forgets the consumed LSNs below the new begin address (after a truncation).</summary>
    public void ForgetConsumedBelow(long begin) => _consumed.ForgetBelow(begin);

    /// <summary>Forgets every message and consumed LSN (before a rebuild from the log).</summary>
    public void Clear()
    {
        _unconsumed.Clear();
        _consumed.Clear();
        Volatile.Write(ref _count, 0);
        Volatile.Write(ref _selfCount, 0);
        Volatile.Write(ref _selfBytes, 0L);
        Volatile.Write(ref _bufferedInBytes, 0L);
        Volatile.Write(ref _spilledInCount, 0);
    }

    /// <summary>The plain SELF counters match the messages (an O(n) recount: debug builds, after recovery, rebuild and checkpoint).</summary>
    [Conditional("DEBUG")]
    public void AssertCounters()
    {
        int count = 0;
        long bytes = 0;
        foreach (var message in _unconsumed.Values)
        {
            if (message.Kind == DarqMessageKind.Self)
            {
                count++;
                bytes += message.Payload.Length;
            }
        }

        Debug.Assert(count == _selfCount && bytes == _selfBytes, $"plain SELF counters {_selfCount}/{_selfBytes} bytes, recount {count}/{bytes} bytes");
        Debug.Assert(_count == _unconsumed.Count, $"unconsumed count {_count}, map {_unconsumed.Count}");
    }
}
