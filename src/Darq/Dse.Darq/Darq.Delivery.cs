using System.IO.Hashing;
using System.Text;
using System.Threading.Channels;

namespace Dse.Darq;

/// <summary>
/// OUT delivery: a background loop sends committed OUT entries to their destinations, per destination in LSN order,
/// retries with backoff until acknowledged, and records each acknowledgement as an ACK entry; the receiving side
/// deduplicates by (source, source LSN).
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

    /// <summary>The number of OUT messages not yet acknowledged by their destinations.</summary>
    public int PendingOutCount => Volatile.Read(ref _pendingOutCount);

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
        if (_dse is null)
        {
            return await EnqueueAsync(SourceProducerId(delivery.Source), delivery.SourceLsn, delivery.Payload, cancellationToken).ConfigureAwait(false);
        }

        ArgumentOutOfRangeException.ThrowIfNegative(delivery.SourceLsn);
        CheckPayload(delivery.Payload.Length, nameof(delivery));
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
    public async ValueTask WaitForDeliveredAsync(long outLsn, CancellationToken cancellationToken = default)
    {
        while (true)
        {
            Task progress;
            await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                if (!_pendingOut.ContainsKey(outLsn))
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

    /// <summary>Called after every commit: wakes the delivery loop, and (speculation off) releases newly committed messages to the processor.</summary>
    private void SignalDelivery()
    {
        _deliverySignal.Writer.TryWrite(true);
        Volatile.Read(ref _processor)?.ReleaseCommitted();
    }

    /// <summary>Wakes waiters of <see cref="WaitForDeliveredAsync"/>; call under the gate.</summary>
    private void PulseDeliveryProgress()
    {
        var done = _deliveryProgress;
        _deliveryProgress = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        done.TrySetResult();
    }

    private async Task RunDeliveryLoopAsync(IDarqDestinations destinations)
    {
        var token = _stopping.Token;
        var delay = TimeSpan.Zero;
        var blocked = new HashSet<string>(StringComparer.Ordinal);
        var batch = new List<KeyValuePair<long, PendingOut>>();
        while (true)
        {
            try
            {
                if (delay == TimeSpan.Zero)
                {
                    // Nothing failed last pass: wait for a commit (which may have made OUT entries deliverable).
                    await _deliverySignal.Reader.ReadAsync(token).ConfigureAwait(false);
                }
                else
                {
                    await Task.Delay(delay, _options.TimeProvider, token).ConfigureAwait(false);
                    _deliverySignal.Reader.TryRead(out _);
                }

                await CollectDeliverableAsync(batch, token).ConfigureAwait(false);
                blocked.Clear();
                foreach (var (lsn, pending) in batch)
                {
                    // Per destination strictly in LSN order, one at a time: the destination's dedup keeps only the
                    // largest LSN, so a later message must never overtake an unacknowledged earlier one.
                    if (!blocked.Contains(pending.Destination) && !await TryDeliverAsync(destinations, lsn, pending, token).ConfigureAwait(false))
                    {
                        blocked.Add(pending.Destination);
                    }
                }

                delay = blocked.Count == 0 ? TimeSpan.Zero : NextRetryDelay(delay);
            }
            catch (OperationCanceledException) when (token.IsCancellationRequested)
            {
                return;
            }
            catch (ObjectDisposedException) when (Volatile.Read(ref _disposed) != 0)
            {
                return;
            }
#pragma warning disable CA1031 // The loop is the DARQ's only sender: an unexpected error must not end delivery silently.
            catch (Exception e)
#pragma warning restore CA1031
            {
                DarqLog.DeliveryLoopError(_logger, e, Name);
                delay = NextRetryDelay(delay);
            }
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

    /// <summary>The pending OUT entries that are committed (a step that is not durable must not leave), in LSN order.</summary>
    private async ValueTask CollectDeliverableAsync(List<KeyValuePair<long, PendingOut>> batch, CancellationToken cancellationToken)
    {
        batch.Clear();
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            long committed = _log.CommittedUntilAddress;
            foreach (var entry in _pendingOut)
            {
                if (entry.Key >= committed && _dse is null)
                {
                    break;
                }

                batch.Add(entry);
            }
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Sends one OUT message and records its acknowledgement; false when it stays pending.</summary>
    private async ValueTask<bool> TryDeliverAsync(IDarqDestinations destinations, long lsn, PendingOut pending, CancellationToken cancellationToken)
    {
        var destination = destinations.Resolve(pending.Destination);
        if (destination is null)
        {
            DarqLog.UnknownDestination(_logger, Name, lsn, pending.Destination);
            DarqInstrumentation.DeliveryFailures.Add(1, _tag);
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
            DarqLog.DeliveryFailed(_logger, e, Name, lsn, pending.Destination);
            DarqInstrumentation.DeliveryFailures.Add(1, _tag);
            return false;
        }

        await AcknowledgeAsync(lsn, cancellationToken).ConfigureAwait(false);
        return true;
    }

    /// <summary>Appends the ACK entry of an acknowledged OUT message and stops holding it pending.</summary>
    private async ValueTask AcknowledgeAsync(long lsn, CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            if (!_pendingOut.ContainsKey(lsn))
            {
                return;
            }

            // Not committed here: if the ACK is lost in a crash, the resend is a duplicate at the destination.
            await AppendAsync(DarqEntryFormat.Ack(_nextSequence, lsn), cancellationToken).ConfigureAwait(false);
            _nextSequence++;
            _pendingOut.Remove(lsn);
            Volatile.Write(ref _pendingOutCount, _pendingOut.Count);
            DarqInstrumentation.Deliveries.Add(1, _tag);
            DarqLog.Delivered(_logger, Name, lsn);
            PulseDeliveryProgress();
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>An OUT message awaiting acknowledgement: where its step starts (truncation keeps whole steps), destination, payload.</summary>
    private sealed record PendingOut(StepStart Step, string Destination, ReadOnlyMemory<byte> Payload);
}
