using System.Runtime.ExceptionServices;
using Dse.Storage;

namespace Dse.Darq;

/// <summary>
/// One lane's turn: sends one destination's OUT messages in LSN order, in runs (batches), with up to
/// <see cref="DarqSpeculation.DeliveryWindow"/> runs in flight (appended at the destination, not yet durable), and records
/// each run's acknowledgement once the destination made it durable. Every send and every failure goes through one path;
/// the speculation mode decides how a run is sent and how its acknowledgement is recorded.
/// </summary>
/// <remarks>
/// <para>Order: a destination deduplicates a source by the largest LSN it has seen, so a source's messages must reach it
/// in LSN order. A turn resolves its destination once, sends the next run only after the previous one was appended, and
/// acknowledges runs in the order sent; a failure ends the turn, and the runs after the first unacknowledged one stay
/// pending and are sent again (the destination drops what it already holds).</para>
/// <para>A run the destination refuses for good (<see cref="DarqDeliveryRefusedException"/>) is sent again one message at
/// a time, which pins the refusal (and the parking) on the message that caused it and delivers the ones before it.</para>
/// </remarks>
internal sealed class DarqSender
{
    private readonly DarqCore _core;
    private readonly DarqOutbox _outbox;
    private readonly DarqOutReader _reader;
    private readonly DarqParkedDestinations _parked;
    private readonly DarqAcknowledger _acknowledger;
    private readonly DarqSpeculation _speculation;

    public DarqSender(DarqCore core, DarqOutbox outbox, DarqOutReader reader, DarqParkedDestinations parked, DarqAcknowledger acknowledger,
        DarqSpeculation speculation)
    {
        _core = core;
        _outbox = outbox;
        _reader = reader;
        _parked = parked;
        _acknowledger = acknowledger;
        _speculation = speculation;
    }

    /// <summary>The most messages to one destination a collection takes: four batches, at least 256.</summary>
    public int CollectionLimit => Math.Max(4 * _core.Options.DeliveryBatchSize, 256);

    /// <summary>
    /// Delivers <paramref name="messages"/> (one destination's, in LSN order), then the destination's next deliverable
    /// messages while it has some and <paramref name="keepGoing"/> allows, until one fails; returns how the turn ended.
    /// </summary>
    public async Task<LaneOutcome> DeliverTurnAsync(IDarqDestinations destinations, OutLane lane, List<KeyValuePair<long, PendingOut>> messages,
        Func<bool> keepGoing, CancellationToken token)
    {
        string name = lane.Destination;
        var destination = destinations.Resolve(name);
        if (destination is null)
        {
            return UnknownDestination(name, messages[0].Key);
        }

        // The durability waits of the runs in flight; cancelled when the turn ends, so a run given up is waited for no more.
        using var waits = CancellationTokenSource.CreateLinkedTokenSource(token);
        var window = new Queue<InFlight>();
        int batchSize = _speculation.DeliveryBatchSize;
        int windowSize = _speculation.DeliveryWindow;
        var outcome = LaneOutcome.Delivered;

        // Messages before this index are sent one at a time (a run refused for good is split to pin the refusal).
        int singlesUntil = 0;
        int i = 0;
        while (true)
        {
            if (i == messages.Count)
            {
                if (!keepGoing() || !await FetchMoreAsync(name, messages[^1].Key, lane.CollectedAtRebuild, messages, token).ConfigureAwait(false))
                {
                    break;
                }

                i = 0;
                singlesUntil = 0;
            }

            KeyValuePair<long, PendingOut>[] run;
            Exception? loadError;
            try
            {
                (run, loadError) = await _reader.LoadAsync(TakeRun(messages, i, i < singlesUntil ? 1 : batchSize), token).ConfigureAwait(false);
            }
            catch (IOException e) when (!token.IsCancellationRequested && e is not StorageFencedException)
            {
                // The commit a spilled message not yet committed waits for failed (commit-record writes keep failing):
                // transient, retried with backoff.
                DarqLogMessages.DeliveryFailed(_core.Logger, e, _core.Name, messages[i].Key, name);
                outcome = LaneOutcome.Failed;
                break;
            }

            if (run.Length == 0)
            {
                if (await UnreadableAsync(name, messages[i].Key, loadError!, token).ConfigureAwait(false) is { } unread)
                {
                    outcome = unread;
                    break;
                }

                i++;
                continue;
            }

            // The registry may have a new destination for the name (a DARQ reopened after a crash): what is in flight to the
            // old one is settled first, so that nothing is sent past a run the old one may have lost.
            var current = destinations.Resolve(name);
            if (!ReferenceEquals(current, destination))
            {
                if (!await SettleAsync(window, name, unpark: true, token).ConfigureAwait(false))
                {
                    outcome = LaneOutcome.Failed;
                    break;
                }

                if (current is null)
                {
                    outcome = UnknownDestination(name, run[0].Key);
                    break;
                }

                destination = current;
            }

            SendOutcome sent;
            try
            {
                sent = await _speculation.SendAsync(destination, run, lane.CollectedAtRebuild, token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (token.IsCancellationRequested)
            {
                throw;
            }
            catch (DarqDeliveryRefusedException) when (run.Length > 1)
            {
                // Nothing of the run was appended: it goes again one message at a time, after what is in flight.
                singlesUntil = i + run.Length;
                continue;
            }
#pragma warning disable CA1031 // Any failure of the destination means "not acknowledged": the messages stay pending.
            catch (Exception e)
#pragma warning restore CA1031
            {
                outcome = Failed(e, run[0].Key, name);
                break;
            }

            // A run cut short by a payload that could not be read is sent; the next one starts at that payload.
            i += run.Length;
            if (sent.Kind == SendOutcomeKind.Sent)
            {
                window.Enqueue(new InFlight(Lsns(run), sent.Batch.WaitDurableAsync(waits.Token).AsTask(), sent.ReplyHeader));
            }
            else if (sent.Kind != SendOutcomeKind.Skipped)
            {
                outcome = sent.Kind == SendOutcomeKind.Held ? LaneOutcome.Failed : LaneOutcome.Reordered;
                break;
            }

            // Acknowledged as soon as durable, and at the latest when the window is full.
            while (window.Count > 0 && (window.Count >= windowSize || window.Peek().Durable.IsCompleted))
            {
                if (!await AcknowledgeOldestAsync(window, name, unpark: true, token).ConfigureAwait(false))
                {
                    outcome = LaneOutcome.Failed;
                    break;
                }
            }

            if (outcome != LaneOutcome.Delivered)
            {
                break;
            }
        }

        try
        {
            return await EndAsync(window, name, outcome, token).ConfigureAwait(false);
        }
        finally
        {
            await waits.CancelAsync().ConfigureAwait(false);
        }
    }

    /// <summary>No destination has the name (now): the turn fails, for backoff to try again.</summary>
    private LaneOutcome UnknownDestination(string name, long lsn)
    {
        DarqLogMessages.UnknownDestination(_core.Logger, _core.Name, lsn, name);
        DarqInstrumentation.DeliveryFailures.Add(1, _core.Tag);

        // Not parked: a registry may add the destination at any time (DarqDestinationRegistry.Add), and backoff finds it.
        _parked.Unpark(name);
        return LaneOutcome.Failed;
    }

    /// <summary>
    /// The run of one destination's messages starting at <paramref name="start"/>: up to <paramref name="batchSize"/> messages
    /// and <see cref="DarqOptions.DeliveryBatchBytes"/> payload bytes (the first always).
    /// </summary>
    private KeyValuePair<long, PendingOut>[] TakeRun(List<KeyValuePair<long, PendingOut>> messages, int start, int batchSize)
    {
        int end = start + 1;
        long bytes = messages[start].Value.Length;
        while (end < messages.Count && end - start < batchSize && bytes + messages[end].Value.Length <= _core.Options.DeliveryBatchBytes)
        {
            bytes += messages[end].Value.Length;
            end++;
        }

        var run = new KeyValuePair<long, PendingOut>[end - start];
        messages.CopyTo(start, run, 0, run.Length);
        return run;
    }

    private static long[] Lsns(KeyValuePair<long, PendingOut>[] run)
    {
        var lsns = new long[run.Length];
        for (int i = 0; i < run.Length; i++)
        {
            lsns[i] = run[i].Key;
        }

        return lsns;
    }

    /// <summary>
    /// The destination's next deliverable messages after <paramref name="after"/> replace <paramref name="messages"/>; false
    /// when there are none, or when a restore rebuilt the pending messages since the turn's were collected (an earlier
    /// message may be pending again: the next turn starts at the earliest).
    /// </summary>
    private async ValueTask<bool> FetchMoreAsync(string destination, long after, long collectedAtRebuild, List<KeyValuePair<long, PendingOut>> messages,
        CancellationToken token)
    {
        messages.Clear();
        await _core.Gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            if (_outbox.Rebuilds != collectedAtRebuild)
            {
                return false;
            }

            _outbox.CollectFor(destination, after, _speculation.DeliverableBelow, CollectionLimit, messages);
        }
        finally
        {
            _core.Gate.Release();
        }

        return messages.Count > 0;
    }

    /// <summary>
    /// Waits for the oldest run in flight to be durable and records its acknowledgement; false when it failed (the rest stay
    /// unacknowledged). <paramref name="unpark"/>: whether the delivery ends a parking of the destination (not once the
    /// turn parked it at a later message).
    /// </summary>
    private async ValueTask<bool> AcknowledgeOldestAsync(Queue<InFlight> window, string destination, bool unpark, CancellationToken token)
    {
        var run = window.Dequeue();
        try
        {
            await run.Durable.ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            throw;
        }
#pragma warning disable CA1031 // The destination may have lost the run: it stays pending and is sent again.
        catch (Exception e)
#pragma warning restore CA1031
        {
            Failed(e, run.Lsns[0], destination);
            Abandon(window);
            return false;
        }

        if (!await _speculation.AcknowledgeAsync(run.Lsns, run.ReplyHeader, token).ConfigureAwait(false))
        {
            Abandon(window);
            return false;
        }

        if (unpark)
        {
            // Delivered: a parking of the destination no longer holds.
            _parked.Unpark(destination);
        }

        return true;
    }

    /// <summary>Acknowledges every run in flight, each once durable; false when one failed (the rest stay unacknowledged).</summary>
    private async ValueTask<bool> SettleAsync(Queue<InFlight> window, string destination, bool unpark, CancellationToken token)
    {
        while (window.Count > 0)
        {
            if (!await AcknowledgeOldestAsync(window, destination, unpark, token).ConfigureAwait(false))
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>Gives up the runs still in flight after one failed: they stay pending (their waits' outcomes are observed, and ignored).</summary>
    private static void Abandon(Queue<InFlight> window)
    {
        while (window.TryDequeue(out var run))
        {
            _ = run.Durable.ContinueWith(static t => _ = t.Exception, CancellationToken.None, TaskContinuationOptions.OnlyOnFaulted, TaskScheduler.Default);
        }
    }

    /// <summary>Acknowledges what is in flight (each run once durable; what was appended before a failure still counts), then reports the outcome.</summary>
    private async ValueTask<LaneOutcome> EndAsync(Queue<InFlight> window, string destination, LaneOutcome outcome, CancellationToken token)
    {
        // After a failure the rest of the window is abandoned: its messages stay pending.
        if (!await SettleAsync(window, destination, unpark: outcome == LaneOutcome.Delivered, token).ConfigureAwait(false) && outcome == LaneOutcome.Delivered)
        {
            outcome = LaneOutcome.Failed;
        }

        if (outcome == LaneOutcome.Failed && _parked.IsHolding(destination))
        {
            outcome = LaneOutcome.Parked;
        }

        if (outcome == LaneOutcome.Parked)
        {
            // Waiters of WaitForDeliveredAsync on the refused message learn of the refusal.
            await _acknowledger.PulseProgressAsync(token).ConfigureAwait(false);
        }

        return outcome;
    }

    /// <summary>
    /// A send failed: a refusal for good (<see cref="DarqDeliveryRefusedException"/>) parks the destination at this message;
    /// anything else is transient (retried with backoff). Logged and counted either way.
    /// </summary>
    private LaneOutcome Failed(Exception error, long lsn, string destination)
    {
        DarqInstrumentation.DeliveryFailures.Add(1, _core.Tag);
        if (error is DarqDeliveryRefusedException refused)
        {
            _parked.Park(destination, lsn, refused.Reason, error);
            return LaneOutcome.Parked;
        }

        // Not a refusal for good (any more): an earlier parking no longer holds, and backoff retries it.
        _parked.Unpark(destination);
        DarqLogMessages.DeliveryFailed(_core.Logger, error, _core.Name, lsn, destination);
        return LaneOutcome.Failed;
    }

    /// <summary>
    /// A lane's next message is spilled and its payload could not be read back. A message no longer pending (acknowledged,
    /// discarded or voided meanwhile, maybe truncated past) is skipped: null is returned and the turn goes on. A damaged
    /// entry parks the destination at it (an operator may discard it; the parked retry reads it again), and so do
    /// <see cref="DarqInFeed.MaxReadFailures"/> failed reads in a row of the same message; a failed read before that backs
    /// the lane off.
    /// </summary>
    private async ValueTask<LaneOutcome?> UnreadableAsync(string destination, long lsn, Exception error, CancellationToken token)
    {
        if (error is ObjectDisposedException)
        {
            ExceptionDispatchInfo.Throw(error);
        }

        await _core.Gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            if (!_outbox.Contains(lsn))
            {
                _reader.ForgetFailures(lsn);
                return null;
            }
        }
        finally
        {
            _core.Gate.Release();
        }

        DarqInstrumentation.DeliveryFailures.Add(1, _core.Tag);
        if (error is not DamagedOutEntryException && _reader.CountFailure(lsn) >= DarqInFeed.MaxReadFailures)
        {
            error = new DamagedOutEntryException(lsn,
                $"DARQ '{_core.Name}': the spilled OUT message at LSN {lsn} could not be read back from the log {DarqInFeed.MaxReadFailures} times in a row: {error.Message}");
        }

        if (error is DamagedOutEntryException damaged)
        {
            _reader.ForgetFailures(lsn);
            _parked.Park(destination, damaged.Lsn, damaged.Message, damaged);
            return LaneOutcome.Parked;
        }

        // Not a refusal for good: an earlier parking no longer holds, and backoff retries it.
        _parked.Unpark(destination);
        DarqLogMessages.DeliveryFailed(_core.Logger, error, _core.Name, lsn, destination);
        return LaneOutcome.Failed;
    }

    /// <summary>A run appended at its destination and not yet acknowledged here; <c>Durable</c> completes once it is durable there.</summary>
    private readonly record struct InFlight(long[] Lsns, Task Durable, ReadOnlyMemory<byte> ReplyHeader);
}
