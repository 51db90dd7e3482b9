namespace Dse.Darq;

/// <summary>Retiring producers that have been silent for <see cref="DarqOptions.RetireIdleProducersAfter"/>.</summary>
public sealed partial class Darq
{
    /// <summary>How often, at most, a commit looks for idle producers (or an eighth of the idle period, if that is shorter).</summary>
    private static readonly TimeSpan IdleSweepInterval = TimeSpan.FromSeconds(1);

    /// <summary>
    /// When each producer in the table last sent (an enqueue or a resend), as <see cref="TimeProvider.GetTimestamp"/> of
    /// <see cref="DarqOptions.TimeProvider"/>; null when <see cref="DarqOptions.RetireIdleProducersAfter"/> is off. Under the gate.
    /// </summary>
    private Dictionary<long, long>? _producerSeenAt;

    /// <summary>The timestamp from which the next commit looks for idle producers. Under the gate.</summary>
    private long _nextIdleSweep;

    /// <summary>At the open, after the table is recovered: every producer in it counts as seen now.</summary>
    private void StartIdleProducerClock()
    {
        if (_options.RetireIdleProducersAfter is null)
        {
            return;
        }

        long now = _options.TimeProvider.GetTimestamp();
        _producerSeenAt = new Dictionary<long, long>(_producers.Count);
        foreach (long producer in _producers.Keys)
        {
            _producerSeenAt[producer] = now;
        }
    }

    /// <summary>Notes that a producer sent (a new message or a duplicate); under the gate.</summary>
    private void NoteProducerSeen(long producerId)
    {
        if (_producerSeenAt is { } seenAt)
        {
            seenAt[producerId] = _options.TimeProvider.GetTimestamp();
        }
    }

    /// <summary>
    /// Before a commit, under the gate: retires every producer silent for <see cref="DarqOptions.RetireIdleProducersAfter"/>
    /// (looking at most once per <see cref="IdleSweepInterval"/>), so that the commit carries the smaller table.
    /// </summary>
    private void RetireIdleProducersUnderGate()
    {
        if (_producerSeenAt is not { } seenAt || _producers.Count == 0)
        {
            return;
        }

        var time = _options.TimeProvider;
        long now = time.GetTimestamp();
        if (now < _nextIdleSweep)
        {
            return;
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

        if (silent is null)
        {
            return;
        }

        foreach (var (producer, sequence, elapsed) in silent)
        {
            DarqLog.IdleProducerRetiring(_logger, Name, producer, elapsed, idle);
            RemoveProducerUnderGate(producer, sequence);
        }
    }
}
