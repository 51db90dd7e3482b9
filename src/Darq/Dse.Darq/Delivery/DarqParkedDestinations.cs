namespace Dse.Darq;

/// <summary>
/// The destinations that refused their oldest pending OUT message for good (<see cref="DarqDeliveryRefusedException"/>):
/// nothing more is sent to one until <see cref="Darq.RetryParkedDelivery"/>, its automatic retry
/// (<see cref="DarqOptions.ParkedDeliveryRetryInterval"/>), a discard of the refused message, or a reopen. Their messages
/// stay pending; other destinations are not held up.
/// </summary>
/// <remarks>Guarded by a lock on itself, not by the DARQ's gate: the delivery loop and its lanes read it between steps.</remarks>
internal sealed class DarqParkedDestinations
{
    private readonly DarqCore _core;
    private readonly Dictionary<string, Parked> _parked = new(StringComparer.Ordinal);

    public DarqParkedDestinations(DarqCore core)
    {
        _core = core;
    }

    /// <summary>The parked destinations that hold (those being retried are not listed).</summary>
    public IReadOnlyList<DarqParkedDelivery> List()
    {
        lock (_parked)
        {
            return [.. _parked.Where(p => !p.Value.Retrying).Select(p => new DarqParkedDelivery(p.Key, p.Value.Lsn, p.Value.Reason, p.Value.ParkedAt, p.Value.Refusals))];
        }
    }

    /// <summary>The refusal of the message at <paramref name="lsn"/> when its destination is parked at it (and not being retried); otherwise null.</summary>
    public string? RefusalOf(string destination, long lsn)
    {
        lock (_parked)
        {
            return _parked.TryGetValue(destination, out var parked) && parked.Lsn == lsn && !parked.Retrying ? parked.Reason : null;
        }
    }

    /// <summary>Unparks a destination on request; false when it was not parked.</summary>
    public bool Retry(string destination)
    {
        lock (_parked)
        {
            if (!_parked.Remove(destination))
            {
                return false;
            }
        }

        DarqLogMessages.DeliveryUnparked(_core.Logger, _core.Name, destination, "on request");
        return true;
    }

    /// <summary>The message at <paramref name="lsn"/> was discarded: a destination parked at it is parked no more.</summary>
    public void Discarded(string destination, long lsn)
    {
        lock (_parked)
        {
            if (_parked.TryGetValue(destination, out var parked) && parked.Lsn == lsn)
            {
                _parked.Remove(destination);
            }
        }
    }

    /// <summary>
    /// Whether <paramref name="destination"/> is parked and not yet due for another try. A parked destination whose
    /// earliest deliverable message (<paramref name="lsn"/>) is a later one than the refused message (which went away:
    /// discarded or rolled back) is tried again at once; one that is due is logged and tried again.
    /// </summary>
    public bool Holds(string destination, long lsn)
    {
        lock (_parked)
        {
            if (!_parked.TryGetValue(destination, out var parked) || parked.Retrying)
            {
                return false;
            }

            if (parked.Lsn != lsn)
            {
                _parked.Remove(destination);
                return false;
            }

            if (parked.RetryAt is not { } due || _core.Options.TimeProvider.GetUtcNow() < due)
            {
                return true;
            }

            // Due: the record stays (a refusal counts up, a delivery or a transient failure removes it) but does not hold.
            _parked[destination] = parked with { RetryAt = null, Retrying = true };
        }

        DarqLogMessages.DeliveryUnparked(_core.Logger, _core.Name, destination, "automatic retry");
        return false;
    }

    /// <summary>A delivery to <paramref name="destination"/> succeeded, or failed transiently: an earlier parking no longer holds.</summary>
    public void Unpark(string destination)
    {
        lock (_parked)
        {
            _parked.Remove(destination);
        }
    }

    /// <summary>Parks <paramref name="destination"/> at the message <paramref name="lsn"/> (again: its refusals count up).</summary>
    public void Park(string destination, long lsn, string reason, Exception? error)
    {
        var interval = _core.Options.ParkedDeliveryRetryInterval;
        var now = _core.Options.TimeProvider.GetUtcNow();
        DateTimeOffset? retryAt = interval == Timeout.InfiniteTimeSpan ? null : now + interval;
        lock (_parked)
        {
            _parked[destination] = _parked.TryGetValue(destination, out var earlier) && earlier.Lsn == lsn
                ? earlier with { Reason = reason, Refusals = earlier.Refusals + 1, RetryAt = retryAt, Retrying = false }
                : new Parked(lsn, reason, now, 1, retryAt);
        }

        DarqInstrumentation.DeliveriesParked.Add(1, _core.Tag);
        DarqLogMessages.DeliveryParked(_core.Logger, error, _core.Name, destination, lsn, reason,
            interval == Timeout.InfiniteTimeSpan ? "never (on request only)" : interval.ToString());
    }

    /// <summary>Whether <paramref name="destination"/> is parked and holding (rather than being retried).</summary>
    public bool IsHolding(string destination)
    {
        lock (_parked)
        {
            return _parked.TryGetValue(destination, out var parked) && !parked.Retrying;
        }
    }

    /// <summary>The earliest automatic retry of a parked destination; null when none is parked or none retries on its own.</summary>
    public DateTimeOffset? NextRetry()
    {
        lock (_parked)
        {
            DateTimeOffset? next = null;
            foreach (var parked in _parked.Values)
            {
                if (parked.RetryAt is { } due && (next is null || due < next))
                {
                    next = due;
                }
            }

            return next;
        }
    }

    /// <summary>
    /// Forgets the parked destinations with no deliverable message (their refused one was discarded or rolled back) and no
    /// lane delivering (<paramref name="isDelivering"/>), so that a due retry does not wake the loop for nothing again and again.
    /// </summary>
    public void ForgetWithout(Func<string, bool> hasMessages, Func<string, bool> isDelivering)
    {
        lock (_parked)
        {
            if (_parked.Count == 0)
            {
                return;
            }

            foreach (string destination in _parked.Keys.Where(d => !hasMessages(d)).ToList())
            {
                if (!isDelivering(destination))
                {
                    _parked.Remove(destination);
                }
            }
        }
    }

    /// <summary>A parked destination: the refused message, why, since when, how often, and when it is tried again on its own (null: on request only).</summary>
    /// <remarks><c>Retrying</c>: due, and being tried again; it no longer holds the destination back.</remarks>
    private sealed record Parked(long Lsn, string Reason, DateTimeOffset ParkedAt, int Refusals, DateTimeOffset? RetryAt, bool Retrying = false);
}
