using System.Diagnostics;

namespace Dse;

/// <summary>
/// Times how far a <see cref="StateObject"/>'s recoverable boundary trails its work, for <c>dse.commit.lag</c>: when
/// each version was handed to Persist, until the owner applies a committed view that covers it. Not thread-safe: the
/// owner changes it only under its writer lock (<see cref="LearnedTimestamp"/> changes nothing).
/// </summary>
/// <remarks>
/// Invariants: the pending versions ascend, each above the version the owner last pruned to and below its current one;
/// there are at most <see cref="MaxPending"/> of them. A version is timed only when the instrument was enabled as it was
/// handed to Persist, so with telemetry off nothing is kept and each call is one branch.
/// </remarks>
internal sealed class CommitLagTracker
{
    /// <summary>Versions timed at most at once; versions handed to Persist beyond it go untimed (about 2.7 minutes of 10 ms group commits).</summary>
    public const int MaxPending = 16_384;

    private readonly TimeProvider _time;

    // The owner's id as the dse.object tag, boxed once.
    private readonly KeyValuePair<string, object?> _tag;

    // A ring of (version, timestamp handed to Persist), oldest at _head; it grows by doubling up to MaxPending.
    private (long Version, long Timestamp)[] _pending = [];
    private int _head;
    private int _count;

    public CommitLagTracker(long objectId, TimeProvider time)
    {
        _time = time;
        _tag = new KeyValuePair<string, object?>(DseTelemetry.ObjectAttribute, objectId);
    }

    /// <summary>Versions timed and not yet committed or discarded.</summary>
    public int PendingCount => _count;

    /// <summary>The moment the owner learned of a committed view, for <see cref="OnCommitted"/>; null when nobody listens.</summary>
    public long? LearnedTimestamp() => DseTelemetry.CommitLag.Enabled ? _time.GetTimestamp() : null;

    /// <summary><paramref name="version"/> was handed to Persist at <paramref name="timestamp"/> (of the owner's <see cref="TimeProvider"/>).</summary>
    public void OnPersisting(long version, long timestamp)
    {
        if (!DseTelemetry.CommitLag.Enabled || _count == MaxPending)
        {
            return;
        }

        Debug.Assert(_count == 0 || Newest.Version < version, "Versions are handed to Persist in ascending order.");
        if (_count == _pending.Length)
        {
            Grow();
        }

        _pending[(_head + _count) % _pending.Length] = (version, timestamp);
        _count++;
    }

    /// <summary>
    /// The boundary reached <paramref name="committed"/> in the owner's world-line: records the lag of every timed version
    /// up to it (when <paramref name="learned"/> says the instrument is on) and forgets them.
    /// </summary>
    public void OnCommitted(long committed, long? learned)
    {
        while (_count > 0 && _pending[_head].Version <= committed)
        {
            if (learned is { } now)
            {
                DseTelemetry.CommitLag.Record(_time.GetElapsedTime(_pending[_head].Timestamp, now).TotalMilliseconds, _tag);
            }

            _head = (_head + 1) % _pending.Length;
            _count--;
        }
    }

    /// <summary>A rollback restored <paramref name="cut"/>: the versions above it will never commit and are forgotten unrecorded.</summary>
    public void DiscardAbove(long cut)
    {
        while (_count > 0 && Newest.Version > cut)
        {
            _count--;
        }
    }

    private (long Version, long Timestamp) Newest => _pending[(_head + _count - 1) % _pending.Length];

    private void Grow()
    {
        var grown = new (long Version, long Timestamp)[Math.Min(MaxPending, Math.Max(16, _pending.Length * 2))];
        for (int i = 0; i < _count; i++)
        {
            grown[i] = _pending[(_head + i) % _pending.Length];
        }

        _pending = grown;
        _head = 0;
    }
}
