using System.Runtime.InteropServices;

namespace Dse.Darq;

/// <summary>
/// The deduplication table: the largest sequence number seen per producer, the check an enqueue makes against it, and
/// the retirement of producers (on request, or after <see cref="DarqOptions.RetireIdleProducersAfter"/> of silence).
/// </summary>
/// <remarks>
/// Invariant: every producer in the table is at most <see cref="DarqOptions.MaxProducers"/> in number and, when idle
/// retirement is on, has a last-seen time. Every member runs under the DARQ's gate; the table goes into every commit
/// cookie, so it always describes exactly the log tail it is committed with.
/// </remarks>
internal sealed class DarqProducerTable
{
    /// <summary>How often, at most, a commit looks for idle producers (or an eighth of the idle period, if that is shorter).</summary>
    private static readonly TimeSpan IdleSweepInterval = TimeSpan.FromSeconds(1);

    private readonly DarqOptions _options;
    private readonly Dictionary<long, long> _producers = [];

    /// <summary>
    /// When each producer in the table last sent (an enqueue or a resend), as <see cref="TimeProvider.GetTimestamp"/> of
    /// <see cref="DarqOptions.TimeProvider"/>; null when <see cref="DarqOptions.RetireIdleProducersAfter"/> is off.
    /// </summary>
    private Dictionary<long, long>? _seenAt;

    /// <summary>The timestamp from which the next sweep looks for idle producers.</summary>
    private long _nextIdleSweep;

    public DarqProducerTable(DarqOptions options)
    {
        _options = options;
    }

    /// <summary>How many producers the table holds.</summary>
    public int Count => _producers.Count;

    /// <summary>The table as the commit cookie records it (read, never kept).</summary>
    public Dictionary<long, long> Entries => _producers;

    /// <summary>The largest sequence number seen from <paramref name="producerId"/>, if the table holds it.</summary>
    public bool TryGet(long producerId, out long seen) => _producers.TryGetValue(producerId, out seen);

    /// <summary>
    /// Checks a deduplicated enqueue: true when <paramref name="sequenceNumber"/> is not above the largest seen (a
    /// duplicate, noted as a sign of life); false when it is new. Throws when the producer would be one too many, or
    /// (<paramref name="contiguous"/>) when the number skips some.
    /// </summary>
    /// <exception cref="DarqSequenceGapException">Contiguous sequences are required and the number skips some.</exception>
    /// <exception cref="InvalidOperationException">The producer is new and the table is full.</exception>
    public bool IsDuplicate(string darqName, long producerId, long sequenceNumber, bool contiguous, KeyValuePair<string, object?> tag)
    {
        bool known = _producers.TryGetValue(producerId, out long seen);
        if (known && sequenceNumber <= seen)
        {
            NoteSeen(producerId);
            DarqInstrumentation.Duplicates.Add(1, tag);
            return true;
        }

        long expected = known ? seen + 1 : 0;
        if (contiguous && sequenceNumber != expected)
        {
            DarqInstrumentation.SequenceGaps.Add(1, tag);
            throw new DarqSequenceGapException(darqName, producerId, sequenceNumber, expected);
        }

        if (!known && _producers.Count >= _options.MaxProducers)
        {
            throw new InvalidOperationException(
                $"DARQ '{darqName}' already tracks {_producers.Count} producers (DarqOptions.MaxProducers); producer {producerId} is refused. " +
                "Retire producers that will never send again (RetireProducerAsync) to free their slots.");
        }

        return false;
    }

    /// <summary>Records a new sequence number of a producer (after its message was appended); returns the value it replaces, -1 for a new producer.</summary>
    public long Record(long producerId, long sequenceNumber)
    {
        ref long slot = ref CollectionsMarshal.GetValueRefOrAddDefault(_producers, producerId, out bool exists);
        long old = exists ? slot : -1;
        slot = sequenceNumber;
        NoteSeen(producerId);
        return old;
    }

    /// <summary>Removes a producer; false when the table did not hold it.</summary>
    public bool Remove(long producerId)
    {
        if (!_producers.Remove(producerId))
        {
            return false;
        }

        _seenAt?.Remove(producerId);
        return true;
    }

    /// <summary>Sets a producer's entry back to <paramref name="value"/> (a rollback's undo; a negative value removes it).</summary>
    public void Undo(long producerId, long value)
    {
        if (value < 0)
        {
            Remove(producerId);
        }
        else
        {
            _producers[producerId] = value;
            NoteSeen(producerId);
        }
    }

    /// <summary>Forgets every producer (a rollback to the initial state).</summary>
    public void Clear()
    {
        _producers.Clear();
        _seenAt?.Clear();
    }

    /// <summary>At the open: takes the recovered table, and every producer in it counts as seen now.</summary>
    public void Recover(Dictionary<long, long> producers)
    {
        foreach (var (producer, sequence) in producers)
        {
            _producers[producer] = sequence;
        }

        if (_options.RetireIdleProducersAfter is null)
        {
            return;
        }

        long now = _options.TimeProvider.GetTimestamp();
        _seenAt = new Dictionary<long, long>(_producers.Count);
        foreach (long producer in _producers.Keys)
        {
            _seenAt[producer] = now;
        }
    }

    /// <summary>
    /// Before a commit: the producers silent for <see cref="DarqOptions.RetireIdleProducersAfter"/> (looking at most once
    /// per <see cref="IdleSweepInterval"/>), with their sequence numbers and how long they were silent; null when none.
    /// The caller removes them, so that the commit carries the smaller table.
    /// </summary>
    public List<(long Producer, long Sequence, TimeSpan Silent)>? FindIdle()
    {
        if (_seenAt is not { } seenAt || _producers.Count == 0)
        {
            return null;
        }

        var time = _options.TimeProvider;
        long now = time.GetTimestamp();
        if (now < _nextIdleSweep)
        {
            return null;
        }

        var idle = _options.RetireIdleProducersAfter!.Value;
        var every = idle / 8 < IdleSweepInterval ? idle / 8 : IdleSweepInterval;
        _nextIdleSweep = now + (long)(every.TotalSeconds * time.TimestampFrequency);
        List<(long Producer, long Sequence, TimeSpan Silent)>? silent = null;
        foreach (var (producer, sequence) in _producers)
        {
            if (!seenAt.TryGetValue(producer, out long seen))
            {
                // Every way into the table notes the producer; should one not, its clock starts now rather than never.
                seenAt[producer] = now;
                continue;
            }

            var elapsed = time.GetElapsedTime(seen, now);
            if (elapsed >= idle)
            {
                (silent ??= []).Add((producer, sequence, elapsed));
            }
        }

        return silent;
    }

    /// <summary>Notes that a producer sent (a new message or a duplicate).</summary>
    private void NoteSeen(long producerId)
    {
        if (_seenAt is { } seenAt)
        {
            seenAt[producerId] = _options.TimeProvider.GetTimestamp();
        }
    }
}
