namespace Dse.Darq;

/// <summary>
/// The end of an OUT message's life: its acknowledgement by the destination or its discard on request, each recorded in
/// an ACK entry, and the waits for it (<see cref="WaitForDeliveredAsync"/>).
/// </summary>
internal sealed class DarqAcknowledger
{
    private readonly DarqCore _core;
    private readonly DarqOutbox _outbox;
    private readonly DarqParkedDestinations _parked;
    private readonly DarqVersions _versions;

    public DarqAcknowledger(DarqCore core, DarqOutbox outbox, DarqParkedDestinations parked, DarqVersions versions)
    {
        _core = core;
        _outbox = outbox;
        _parked = parked;
        _versions = versions;
    }

    /// <summary>Appends one ACK entry for the acknowledged OUT messages still pending among <paramref name="lsns"/> and stops holding them pending.</summary>
    public async ValueTask AcknowledgeAsync(long[] lsns, CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            long[] pending = lsns;
            foreach (long lsn in lsns)
            {
                if (!_outbox.Contains(lsn))
                {
                    pending = [.. lsns.Where(_outbox.Contains)];
                    break;
                }
            }

            if (pending.Length == 0)
            {
                return;
            }

            // Not committed here: if the ACK is lost in a crash, the resends are duplicates at the destination.
            await _core.AppendAsync(DarqEntryFormat.Ack(_core.NextSequence, pending), cancellationToken).ConfigureAwait(false);
            _core.NextSequence++;
            foreach (long lsn in pending)
            {
                _outbox.Remove(lsn);
                DarqLogMessages.Delivered(_core.Logger, _core.Name, lsn);
            }

            DarqInstrumentation.Deliveries.Add(pending.Length, _core.Tag);
            _outbox.PulseProgress();
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>Appends the discard of a pending OUT message; returns the address after its ACK entry, or -1 when nothing is pending there.</summary>
    public async ValueTask<long> DiscardAsync(long outLsn, CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            if (!_outbox.TryGet(outLsn, out var pending))
            {
                return -1;
            }

            await _core.AppendAsync(DarqEntryFormat.Ack(_core.NextSequence, outLsn, discarded: true), cancellationToken).ConfigureAwait(false);
            _core.NextSequence++;
            _outbox.Remove(outLsn);
            _parked.Discarded(pending.Destination, outLsn);
            DarqInstrumentation.OutDiscarded.Add(1, _core.Tag);
            DarqLogMessages.OutDiscarded(_core.Logger, _core.Name, outLsn, pending.Destination);
            _outbox.PulseProgress();
            return _core.Log.TailAddress;
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>
    /// Waits until an OUT message is acknowledged by its destination (at once when <paramref name="outLsn"/> is no pending
    /// OUT entry: already acknowledged, or never one).
    /// </summary>
    /// <exception cref="ObjectDisposedException">The DARQ closed before the message was acknowledged.</exception>
    /// <exception cref="DseRolledBackException">A rollback voided the step that produced the message.</exception>
    /// <exception cref="DarqDeliveryRefusedException">The destination refused the message for good and is parked.</exception>
    public async ValueTask WaitForDeliveredAsync(long outLsn, CancellationToken cancellationToken)
    {
        while (true)
        {
            Task progress;
            await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                if (_outbox.TryGet(outLsn, out var waiting))
                {
                    if (_parked.RefusalOf(waiting.Destination, outLsn) is { } reason)
                    {
                        throw new DarqDeliveryRefusedException(waiting.Destination, reason);
                    }
                }
                else
                {
                    // A voided OUT entry is no longer pending either, but it was never acknowledged: it never happened.
                    if (_versions.IsVoided(outLsn))
                    {
                        throw new DseRolledBackException($"DARQ '{_core.Name}': the OUT message at LSN {outLsn} was rolled back before it was delivered.");
                    }

                    return;
                }

                _core.ThrowIfClosed();
                progress = _outbox.Progress;
            }
            finally
            {
                _core.Gate.Release();
            }

            await progress.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>How many OUT messages to <paramref name="destination"/> are pending, read under the gate.</summary>
    public async ValueTask<int> PendingOutCountAsync(string destination, CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            return _outbox.CountOf(destination);
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>Wakes waiters of <see cref="WaitForDeliveredAsync"/> from outside the gate.</summary>
    public async ValueTask PulseProgressAsync(CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            _outbox.PulseProgress();
        }
        finally
        {
            _core.Gate.Release();
        }
    }
}
