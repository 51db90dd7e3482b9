using System.IO.Hashing;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading.Channels;

namespace Dse.Darq;

/// <summary>
/// OUT delivery: a background loop sends committed OUT entries to their destinations, per destination in LSN order and
/// each destination in its own lane (Darq.DeliveryLanes.cs), retries with backoff until acknowledged, and records each
/// acknowledgement as an ACK entry; the receiving side deduplicates by (source, source LSN).
/// </summary>
public sealed partial class Darq
{
    /// <summary>Wakes the delivery loop after a commit (capacity 1: a pending wake-up covers any number of commits).</summary>
    private readonly Channel<bool> _deliverySignal = Channel.CreateBounded<bool>(
        new BoundedChannelOptions(1) { FullMode = BoundedChannelFullMode.DropWrite, SingleReader = true });

    /// <summary>Completed and replaced (under the gate) whenever an OUT entry is acknowledged or the DARQ closes.</summary>
    private TaskCompletionSource _deliveryProgress = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private Task _deliveryLoop = Task.CompletedTask;
    private int _pendingOutCount;

    /// <summary>Parked destinations by name (see <see cref="DarqParkedDelivery"/>); guarded by itself, not the gate.</summary>
    private readonly Dictionary<string, ParkedDestination> _parked = new(StringComparer.Ordinal);

    /// <summary>
    /// The destinations that refused their oldest pending OUT message for good (<see cref="DarqDeliveryRefusedException"/>):
    /// nothing more is sent to them until
    /// <see cref="RetryParkedDelivery"/>, <see cref="DarqOptions.ParkedDeliveryRetryInterval"/> or a reopen. Their messages
    /// stay pending; other destinations are not held up.
    /// </summary>
    public IReadOnlyList<DarqParkedDelivery> ParkedDeliveries
    {
        get
        {
            lock (_parked)
            {
                return [.. _parked.Where(p => !p.Value.Retrying).Select(p => new DarqParkedDelivery(p.Key, p.Value.Lsn, p.Value.Reason, p.Value.ParkedAt, p.Value.Refusals))];
            }
        }
    }

    /// <summary>
    /// Tries a parked destination again now (after its configuration was fixed, say): the delivery loop sends it its
    /// oldest pending OUT message on its next pass.
    /// </summary>
    /// <param name="destination">The destination's name.</param>
    /// <returns>Whether the destination was parked.</returns>
    public bool RetryParkedDelivery(string destination)
    {
        ArgumentException.ThrowIfNullOrEmpty(destination);
        lock (_parked)
        {
            if (!_parked.Remove(destination))
            {
                return false;
            }
        }

        DarqLog.DeliveryUnparked(_logger, Name, destination, "on request");
        _deliverySignal.Writer.TryWrite(true);
        return true;
    }

    /// <summary>
    /// Gives up a pending OUT message: appends an ACK entry marked "discarded" and waits until it is durable (under general
    /// speculation: recoverable), so the message is never sent again, and later messages to its destination (which it was
    /// holding up, if it was parked) go out. The destination may already hold the message, if an earlier attempt got
    /// through and only its acknowledgement was lost.
    /// </summary>
    /// <param name="outLsn">The OUT message's LSN (<see cref="DarqStepResult.OutLsns"/>, <see cref="DarqParkedDelivery.Lsn"/>).</param>
    /// <param name="cancellationToken">Cancels waiting for room under backpressure or for the gate (nothing is appended then), or for durability (the discard stands).</param>
    /// <returns><see langword="true"/> when the message was discarded; <see langword="false"/> when no OUT message is pending at that LSN (acknowledged, discarded, rolled back, or never one).</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="outLsn"/> is negative.</exception>
    public async ValueTask<bool> DiscardOutAsync(long outLsn, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(outLsn);
        long durableAt;
        if (_dse is null)
        {
            durableAt = await DiscardCoreAsync(outLsn, cancellationToken).ConfigureAwait(false);
        }
        else
        {
            // Like an acknowledgement, the discard is a local action: a rollback that voids it makes the message pending again.
            // Under backpressure it waits before it starts, as every other action does (nothing is appended meanwhile).
            await PaceAsync(_dse, cancellationToken).ConfigureAwait(false);
            await _dse.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                durableAt = await DiscardCoreAsync(outLsn, cancellationToken).ConfigureAwait(false);
            }
            finally
            {
                _dse.EndAction();
            }
        }

        if (durableAt < 0)
        {
            return false;
        }

        _deliverySignal.Writer.TryWrite(true);
        await EnsureDurableAsync(durableAt, cancellationToken).ConfigureAwait(false);
        return true;
    }

    /// <summary>Appends the discard of a pending OUT message; returns the address after its ACK entry, or -1 when nothing is pending there.</summary>
    private async ValueTask<long> DiscardCoreAsync(long outLsn, CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            if (!_pendingOut.TryGetValue(outLsn, out var pending))
            {
                return -1;
            }

            await AppendAsync(DarqEntryFormat.Ack(_nextSequence, outLsn, discarded: true), cancellationToken).ConfigureAwait(false);
            _nextSequence++;
            RemovePendingOut(outLsn);
            Volatile.Write(ref _pendingOutCount, _pendingOut.Count);
            lock (_parked)
            {
                if (_parked.TryGetValue(pending.Destination, out var parked) && parked.Lsn == outLsn)
                {
                    _parked.Remove(pending.Destination);
                }
            }

            DarqInstrumentation.OutDiscarded.Add(1, _tag);
            DarqLog.OutDiscarded(_logger, Name, outLsn, pending.Destination);
            PulseDeliveryProgress();
            return _log.TailAddress;
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>The number of OUT messages not yet acknowledged by their destinations.</summary>
    public int PendingOutCount => Volatile.Read(ref _pendingOutCount);

    /// <summary>
    /// The number of OUT messages to one destination not yet acknowledged (<see cref="PendingOutCount"/> counts every
    /// destination's): for a parked destination (<see cref="ParkedDeliveries"/>), its refused message and every later one
    /// held behind it. Read under the DARQ's gate (a count kept per destination).
    /// </summary>
    /// <param name="destination">The destination's name, as the OUT messages name it.</param>
    /// <param name="cancellationToken">Cancels waiting for the gate.</param>
    /// <returns>The count; 0 for a destination with nothing pending (or never named).</returns>
    /// <exception cref="ArgumentException"><paramref name="destination"/> is null or empty.</exception>
    /// <exception cref="ObjectDisposedException">The DARQ is closed.</exception>
    public async ValueTask<int> PendingOutCountAsync(string destination, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(destination);
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            return PendingOutCountOf(destination);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>
    /// The producer id under which a destination deduplicates the OUT messages of the source DARQ named
    /// <paramref name="sourceName"/> (the sequence number is the OUT entry's LSN): XxHash64 of the UTF-8 bytes of
    /// <c>"dse.darq.source:" + sourceName</c>. Producers that enqueue directly must not use these ids.
    /// </summary>
    /// <param name="sourceName">The source DARQ's name.</param>
    /// <returns>The producer id.</returns>
    public static long SourceProducerId(string sourceName)
    {
        ArgumentException.ThrowIfNullOrEmpty(sourceName);
        return unchecked((long)XxHash64.HashToUInt64(Encoding.UTF8.GetBytes("dse.darq.source:" + sourceName)));
    }

    /// <summary>
    /// Receives an OUT message from another DARQ as an IN message, deduplicated by (source, source LSN): producer id
    /// <see cref="SourceProducerId"/> of the source, sequence number the source LSN. A resend of a message already
    /// received (the source crashed before it recorded the acknowledgement) is a duplicate and appends nothing.
    /// </summary>
    /// <param name="delivery">The message.</param>
    /// <param name="cancellationToken">Cancels waiting for the gate or log memory; nothing is appended then.</param>
    /// <returns>The enqueue result; acknowledge the source only once <see cref="DarqEnqueueResult.DurableAt"/> is committed.</returns>
    /// <remarks>
    /// Deduplication keeps the largest sequence number seen per producer, so a source must send each destination its OUT
    /// messages in LSN order and send the next only after the previous is acknowledged (the delivery loop does): a
    /// message overtaken by a later one would be taken for a duplicate and lost. Gaps in the LSNs are fine.
    /// </remarks>
    public async ValueTask<DarqEnqueueResult> ReceiveAsync(DarqDelivery delivery, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(delivery.SourceLsn);
        CheckPayload(delivery.Payload.Length, nameof(delivery));
        if (_dse is null)
        {
            // Never checked for gaps (ContiguousProducerSequences): source LSNs have them.
            return await EnqueueCoreAsync(delivery.Payload, SourceProducerId(delivery.Source), delivery.SourceLsn, dedup: true, contiguous: false, cancellationToken)
                .ConfigureAwait(false);
        }

        return (await ReceiveInActionAsync(delivery, cancellationToken).ConfigureAwait(false)).Result;
    }

    /// <summary>
    /// Waits until an OUT message is acknowledged by its destination (at once when <paramref name="outLsn"/> is no pending
    /// OUT entry: already acknowledged, or never one).
    /// </summary>
    /// <param name="outLsn">The OUT entry's LSN (from <see cref="DarqStepResult.OutLsns"/>).</param>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <exception cref="ObjectDisposedException">The DARQ closed before the message was acknowledged.</exception>
    /// <exception cref="DseRolledBackException">General speculation: a rollback voided the step that produced the message, which is never delivered.</exception>
    /// <exception cref="DarqDeliveryRefusedException">
    /// The destination refused the message for good and is parked (see <see cref="ParkedDeliveries"/>); the message stays
    /// pending.
    /// </exception>
    public async ValueTask WaitForDeliveredAsync(long outLsn, CancellationToken cancellationToken = default)
    {
        while (true)
        {
            Task progress;
            await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                if (_pendingOut.TryGetValue(outLsn, out var waiting))
                {
                    lock (_parked)
                    {
                        if (_parked.TryGetValue(waiting.Destination, out var parked) && parked.Lsn == outLsn && !parked.Retrying)
                        {
                            throw new DarqDeliveryRefusedException(waiting.Destination, parked.Reason);
                        }
                    }
                }
                else
                {
                    // A voided OUT entry is no longer pending either, but it was never acknowledged: it never happened.
                    if (IsVoided(outLsn))
                    {
                        throw new DseRolledBackException($"DARQ '{Name}': the OUT message at LSN {outLsn} was rolled back before it was delivered.");
                    }

                    return;
                }

                ThrowIfDisposed();
                progress = _deliveryProgress.Task;
            }
            finally
            {
                _gate.Release();
            }

            await progress.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Waits until the entry ending at <paramref name="address"/> may be acknowledged: committed (waiting for the group commit,
    /// or committing when there is none), or under general speculation inside the recoverable boundary.
    /// </summary>
    internal ValueTask EnsureDurableAsync(long address, CancellationToken cancellationToken)
    {
        if (_dse is not null)
        {
            // General speculation: a durable acknowledgement waits for the coordinator to commit the version (a barrier).
            // The address is an exclusive end: the entry is the one ending there, not whatever follows it.
            return WaitForRecoverableAsync(address - 1, cancellationToken);
        }

        if (_log.CommittedUntilAddress >= address)
        {
            return ValueTask.CompletedTask;
        }

        return _options.CommitInterval == Timeout.InfiniteTimeSpan ? CommitAsync(cancellationToken) : WaitForCommitAsync(address, cancellationToken);
    }

    /// <summary>
    /// Called after every commit: wakes the delivery loop and the feed loop (spilled messages are read back once
    /// committed), and (speculation off) releases newly committed messages to the processor.
    /// </summary>
    private void SignalDelivery()
    {
        _deliverySignal.Writer.TryWrite(true);
        Volatile.Read(ref _processor)?.ReleaseCommitted();
        SignalFeed();
    }

    /// <summary>Wakes waiters of <see cref="WaitForDeliveredAsync"/>; call under the gate.</summary>
    private void PulseDeliveryProgress()
    {
        var done = _deliveryProgress;
        _deliveryProgress = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        done.TrySetResult();
    }

    /// <summary>
    /// Sends a run of OUT messages to one destination in one delivery and records their acknowledgement in one ACK entry;
    /// false when they stay pending. A refusal for good falls back to one message at a time, which pins the refusal (and
    /// the parking) on the message that caused it and delivers the ones before it.
    /// </summary>
    private async ValueTask<bool> TryDeliverBatchAsync(IDarqDestinations destinations, KeyValuePair<long, PendingOut>[] run, CancellationToken cancellationToken)
    {
        var (firstLsn, first) = run[0];
        var destination = destinations.Resolve(first.Destination);
        if (destination is null)
        {
            return await TryDeliverAsync(destinations, firstLsn, first, cancellationToken).ConfigureAwait(false);
        }

        var deliveries = new DarqDelivery[run.Length];
        for (int i = 0; i < run.Length; i++)
        {
            deliveries[i] = new DarqDelivery(Name, run[i].Key, run[i].Value.Destination, run[i].Value.Payload);
        }

        try
        {
            await destination.DeliverBatchAsync(deliveries, cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            throw;
        }
        catch (DarqDeliveryRefusedException)
        {
            foreach (var (lsn, pending) in run)
            {
                if (!await TryDeliverAsync(destinations, lsn, pending, cancellationToken).ConfigureAwait(false))
                {
                    return false;
                }
            }

            return true;
        }
#pragma warning disable CA1031 // Any failure of the destination means "not acknowledged": the messages stay pending.
        catch (Exception e)
#pragma warning restore CA1031
        {
            DeliveryFailed(e, firstLsn, first);
            return false;
        }

        await AcknowledgeAsync(run.Select(r => r.Key).ToArray(), cancellationToken).ConfigureAwait(false);
        return true;
    }

    /// <summary>Waits for a delivery signal, or until <paramref name="until"/> (a parked destination's next try) when it is set.</summary>
    private async ValueTask WaitForDeliverySignalAsync(DateTimeOffset? until, CancellationToken token)
    {
        if (until is not { } due)
        {
            await _deliverySignal.Reader.ReadAsync(token).ConfigureAwait(false);
            return;
        }

        var wait = due - _options.TimeProvider.GetUtcNow();
        if (wait <= TimeSpan.Zero)
        {
            _deliverySignal.Reader.TryRead(out _);
            return;
        }

        using var timeout = new CancellationTokenSource(wait, _options.TimeProvider);
        if (_options.TimeProvider.GetUtcNow() >= due)
        {
            // The clock passed the due time while the timer was made, which counts its delay from then: it would be late.
            _deliverySignal.Reader.TryRead(out _);
            return;
        }

        using var linked = CancellationTokenSource.CreateLinkedTokenSource(token, timeout.Token);
        try
        {
            await _deliverySignal.Reader.ReadAsync(linked.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (!token.IsCancellationRequested)
        {
            // The parked destination is due: a pass tries it again.
        }
    }

    /// <summary>
    /// Whether <paramref name="destination"/> is parked and not yet due for another try. A parked destination whose
    /// message at <paramref name="lsn"/> is a later one than the refused message (which went away: discarded or rolled
    /// back) is tried again at once; one that is due is logged and tried again.
    /// </summary>
    private bool IsParked(string destination, long lsn)
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

            if (parked.RetryAt is not { } due || _options.TimeProvider.GetUtcNow() < due)
            {
                return true;
            }

            // Due: the record stays (a refusal counts up, a delivery or a transient failure removes it) but does not hold.
            _parked[destination] = parked with { RetryAt = null, Retrying = true };
        }

        DarqLog.DeliveryUnparked(_logger, Name, destination, "automatic retry");
        return false;
    }

    private void Unpark(string destination)
    {
        lock (_parked)
        {
            _parked.Remove(destination);
        }
    }

    /// <summary>The earliest automatic retry of a parked destination; null when none is parked or none retries on its own.</summary>
    private DateTimeOffset? NextParkedRetry()
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
    /// A delivery attempt failed: a refusal for good (<see cref="DarqDeliveryRefusedException"/>) parks the destination at
    /// this message; anything else is transient (retried with backoff). Logged and counted either way.
    /// </summary>
    private void DeliveryFailed(Exception error, long lsn, PendingOut pending)
    {
        DarqInstrumentation.DeliveryFailures.Add(1, _tag);
        if (error is DarqDeliveryRefusedException refused)
        {
            Park(pending.Destination, lsn, refused.Reason, error);
            return;
        }

        // Not a refusal for good (any more): an earlier parking no longer holds, and backoff retries it.
        Unpark(pending.Destination);
        DarqLog.DeliveryFailed(_logger, error, Name, lsn, pending.Destination);
    }

    /// <summary>Parks <paramref name="destination"/> at the message <paramref name="lsn"/> (again: its refusals count up); the delivery loop then wakes waiters of that message.</summary>
    private void Park(string destination, long lsn, string reason, Exception? error)
    {
        var interval = _options.ParkedDeliveryRetryInterval;
        var now = _options.TimeProvider.GetUtcNow();
        DateTimeOffset? retryAt = interval == Timeout.InfiniteTimeSpan ? null : now + interval;
        lock (_parked)
        {
            _parked[destination] = _parked.TryGetValue(destination, out var earlier) && earlier.Lsn == lsn
                ? earlier with { Reason = reason, Refusals = earlier.Refusals + 1, RetryAt = retryAt, Retrying = false }
                : new ParkedDestination(lsn, reason, now, 1, retryAt);
        }

        DarqInstrumentation.DeliveriesParked.Add(1, _tag);
        DarqLog.DeliveryParked(_logger, error, Name, destination, lsn, reason,
            interval == Timeout.InfiniteTimeSpan ? "never (on request only)" : interval.ToString());
    }

    /// <summary>
    /// Whether the attempt that just failed parked <paramref name="destination"/> (at whichever message of a run was
    /// refused), rather than failing transiently.
    /// </summary>
    private bool WasJustParked(string destination)
    {
        lock (_parked)
        {
            return _parked.TryGetValue(destination, out var parked) && !parked.Retrying;
        }
    }

    /// <summary>Wakes waiters of <see cref="WaitForDeliveredAsync"/> from outside the gate.</summary>
    private async ValueTask PulseDeliveryProgressAsync(CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            PulseDeliveryProgress();
        }
        finally
        {
            _gate.Release();
        }
    }

    private TimeSpan NextRetryDelay(TimeSpan delay)
    {
        if (delay == TimeSpan.Zero)
        {
            return _options.DeliveryRetryMinDelay;
        }

        var doubled = delay * 2;
        return doubled > _options.DeliveryRetryMaxDelay ? _options.DeliveryRetryMaxDelay : doubled;
    }

    /// <summary>
    /// Collects, under the gate, the deliverable OUT messages (committed ones; under general speculation all): for each
    /// destination its earliest pending messages in LSN order, at most <see cref="MaxCollectedPerDestination"/> of them,
    /// the destinations oldest pending message first. Returns the rebuild count the collection belongs to.
    /// </summary>
    /// <remarks>
    /// A pass takes only the head of each destination's backlog: a destination that is down while its sender keeps
    /// stepping can hold millions of pending messages, and copying them all on every pass (each commit, acknowledgement
    /// and turn's end) held the gate, and every enqueue and step behind it, for milliseconds at a time. A turn that
    /// delivered its messages ends, and the next pass collects the next ones.
    /// </remarks>
    private async ValueTask<long> CollectDeliverableAsync(List<KeyValuePair<long, PendingOut>> batch, CancellationToken cancellationToken)
    {
        batch.Clear();
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            long committed = _dse is null ? _log.CommittedUntilAddress : long.MaxValue;
            int limit = MaxCollectedPerDestination;
            if (_pendingOutUnordered)
            {
                // The per-destination queues are not in LSN order (never expected): one scan in LSN order instead.
                var taken = new Dictionary<string, int>(StringComparer.Ordinal);
                foreach (var entry in _pendingOut)
                {
                    if (entry.Key >= committed)
                    {
                        break;
                    }

                    ref int count = ref CollectionsMarshal.GetValueRefOrAddDefault(taken, entry.Value.Destination, out _);
                    if (count++ < limit)
                    {
                        batch.Add(entry);
                    }
                }

                return _pendingOutRebuilds;
            }

            var heads = new List<(long First, DestinationOut Messages)>(_pendingOutByDestination.Count);
            foreach (var messages in _pendingOutByDestination.Values)
            {
                long first = messages.Lsns.Peek();
                if (first < committed)
                {
                    heads.Add((first, messages));
                }
            }

            heads.Sort(static (x, y) => x.First.CompareTo(y.First));
            foreach (var (_, messages) in heads)
            {
                int count = 0;
                foreach (long lsn in messages.Lsns)
                {
                    if (count == limit || lsn >= committed)
                    {
                        break;
                    }

                    // Acknowledged out of order, not yet dropped from the queue: skipped.
                    if (_pendingOut.TryGetValue(lsn, out var pending))
                    {
                        batch.Add(new(lsn, pending));
                        count++;
                    }
                }
            }

            return _pendingOutRebuilds;
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>What a delivery pass would collect now, as (LSN, destination) in collection order; for tests.</summary>
    internal async ValueTask<List<(long Lsn, string Destination)>> CollectDeliverableForTestAsync()
    {
        var batch = new List<KeyValuePair<long, PendingOut>>();
        await CollectDeliverableAsync(batch, CancellationToken.None).ConfigureAwait(false);
        return batch.ConvertAll(e => (e.Key, e.Value.Destination));
    }

    /// <summary>The most messages to one destination a delivery pass collects for its turn: four batches, at least 256.</summary>
    private int MaxCollectedPerDestination => Math.Max(4 * _options.DeliveryBatchSize, 256);

    /// <summary>Sends one OUT message and records its acknowledgement; false when it stays pending.</summary>
    private async ValueTask<bool> TryDeliverAsync(IDarqDestinations destinations, long lsn, PendingOut pending, CancellationToken cancellationToken)
    {
        var destination = destinations.Resolve(pending.Destination);
        if (destination is null)
        {
            DarqLog.UnknownDestination(_logger, Name, lsn, pending.Destination);
            DarqInstrumentation.DeliveryFailures.Add(1, _tag);

            // Not parked: a registry may add the destination at any time (DarqDestinationRegistry.Add), and backoff finds it.
            Unpark(pending.Destination);
            return false;
        }

        if (_dse is not null)
        {
            // A destination outside the cluster would keep a message from a version that later rolls back.
            return destination.ReceivesSpeculatively
                ? await TryDeliverSpeculativeAsync(destination, lsn, pending, cancellationToken).ConfigureAwait(false)
                : await TryDeliverRecoverableAsync(destination, lsn, pending, cancellationToken).ConfigureAwait(false);
        }

        try
        {
            await destination.DeliverAsync(new DarqDelivery(Name, lsn, pending.Destination, pending.Payload), cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            throw;
        }
#pragma warning disable CA1031 // Any failure of the destination means "not acknowledged": the message stays pending.
        catch (Exception e)
#pragma warning restore CA1031
        {
            DeliveryFailed(e, lsn, pending);
            return false;
        }

        await AcknowledgeAsync(lsn, cancellationToken).ConfigureAwait(false);
        return true;
    }

    /// <summary>Appends one ACK entry for the acknowledged OUT messages still pending among <paramref name="lsns"/> and stops holding them pending.</summary>
    private async ValueTask AcknowledgeAsync(long[] lsns, CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            var pending = lsns.Where(_pendingOut.ContainsKey).ToArray();
            if (pending.Length == 0)
            {
                return;
            }

            // Not committed here: if the ACK is lost in a crash, the resends are duplicates at the destination.
            await AppendAsync(DarqEntryFormat.Ack(_nextSequence, pending), cancellationToken).ConfigureAwait(false);
            _nextSequence++;
            foreach (long lsn in pending)
            {
                RemovePendingOut(lsn);
                DarqLog.Delivered(_logger, Name, lsn);
            }

            Volatile.Write(ref _pendingOutCount, _pendingOut.Count);
            DarqInstrumentation.Deliveries.Add(pending.Length, _tag);
            PulseDeliveryProgress();
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Appends the ACK entry of an acknowledged OUT message and stops holding it pending.</summary>
    private ValueTask AcknowledgeAsync(long lsn, CancellationToken cancellationToken) => AcknowledgeAsync([lsn], cancellationToken);

    /// <summary>A parked destination: the refused message, why, since when, how often, and when it is tried again on its own (null: on request only).</summary>
    /// <remarks><c>Retrying</c>: due, and being tried again; it no longer holds the destination back.</remarks>
    private sealed record ParkedDestination(long Lsn, string Reason, DateTimeOffset ParkedAt, int Refusals, DateTimeOffset? RetryAt, bool Retrying = false);

    /// <summary>
    /// An OUT message awaiting acknowledgement: where its step starts (truncation keeps whole steps), destination, payload
    /// (none for a spilled one, read back from the log when sent).
    /// </summary>
    private readonly record struct PendingOut(StepStart Step, string Destination, ReadOnlyMemory<byte> Payload, int SpilledLength = -1)
    {
        /// <summary>Whether the payload is in the log only (beyond <see cref="DarqOptions.MaxBufferedOutBytes"/>, or no destinations); <see cref="SpilledLength"/> is its length then.</summary>
        public bool IsSpilled => SpilledLength >= 0;

        /// <summary>The payload's length, in memory or not.</summary>
        public int Length => IsSpilled ? SpilledLength : Payload.Length;
    }
}
