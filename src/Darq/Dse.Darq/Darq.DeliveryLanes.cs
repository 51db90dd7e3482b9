using System.Collections.Concurrent;
using System.Diagnostics;
using System.Runtime.ExceptionServices;
using Dse.Storage;

namespace Dse.Darq;

/// <summary>
/// Delivery lanes: the delivery loop is a dispatcher that finds the deliverable OUT entries and hands each destination's
/// to a lane, which delivers them (in LSN order, in batches) while the other destinations' lanes deliver theirs. A
/// destination that is slow, down or backing off holds up only its own lane. At most
/// <see cref="DarqOptions.MaxConcurrentDeliveries"/> lanes deliver at once; a lane is a task only while it delivers.
/// </summary>
public sealed partial class Darq
{
    /// <summary>
    /// The destinations with a lane: delivering now, or backing off after failed attempts. Written by the dispatcher only
    /// (the delivery loop), under a lock on itself so that <see cref="DeliveryLanes"/> can read it.
    /// </summary>
    private readonly Dictionary<string, DeliveryLane> _lanes = new(StringComparer.Ordinal);

    /// <summary>
    /// The destinations the delivery loop is working on: those delivering now, and those waiting after failed attempts
    /// (with the time of their next try). A destination with nothing to deliver, or whose last attempt succeeded and which
    /// is not delivering, is not listed; parked destinations are in <see cref="ParkedDeliveries"/>.
    /// </summary>
    public IReadOnlyList<DarqDeliveryLane> DeliveryLanes
    {
        get
        {
            lock (_lanes)
            {
                return [.. _lanes.Values.Where(l => l.Turn is not null || l.Failures > 0).Select(l => new DarqDeliveryLane(l.Destination, l.Turn is not null, l.Failures, l.Failures > 0 ? l.RetryAt : null))];
            }
        }
    }

    /// <summary>
    /// The dispatcher. Each pass (on a commit, an acknowledgement, a lane's end, or when a backoff or parked destination is
    /// due) ends the turns lanes reported, collects the deliverable entries and starts a turn for each destination that
    /// has some and is not delivering, backing off, parked, or over the bound. A destination has at most one turn at a
    /// time, holding its messages of one collection in LSN order: the next message to it leaves only after the previous
    /// is acknowledged, which the destination's "largest LSN seen" deduplication needs.
    /// </summary>
    private async Task RunDeliveryLoopAsync(IDarqDestinations destinations)
    {
        var token = _stopping.Token;
        var ended = new ConcurrentQueue<(DeliveryLane Lane, LaneOutcome Outcome)>();
        var collected = new List<KeyValuePair<long, PendingOut>>();
        var errorDelay = TimeSpan.Zero;
        int waitingLogged = 0;
        bool fenced = false;
        try
        {
            while (true)
            {
                try
                {
                    if (errorDelay > TimeSpan.Zero)
                    {
                        await Task.Delay(errorDelay, _options.TimeProvider, token).ConfigureAwait(false);
                    }

                    await WaitForDeliverySignalAsync(NextDeliveryDue(), token).ConfigureAwait(false);
                    EndTurns(ended);
                    long rebuilds = await CollectDeliverableAsync(collected, token).ConfigureAwait(false);
                    int waiting = StartTurns(destinations, collected, rebuilds, ended, token);
                    if (waiting != waitingLogged)
                    {
                        waitingLogged = waiting;
                        if (waiting > 0)
                        {
                            DarqLog.DeliveryLanesFull(_logger, Name, _options.MaxConcurrentDeliveries, waiting);
                        }
                    }

                    errorDelay = TimeSpan.Zero;
                }
                catch (OperationCanceledException) when (token.IsCancellationRequested)
                {
                    return;
                }
                catch (ObjectDisposedException) when (Volatile.Read(ref _disposed) != 0)
                {
                    return;
                }
                catch (Exception e) when (e is StorageFencedException || FencedException() is not null)
                {
                    // Another instance owns the storage: no acknowledgement can be recorded here again, and that
                    // instance delivers the pending messages itself. Retrying would only log the same error forever.
                    DarqLog.DeliveryLoopFenced(_logger, e, Name);
                    fenced = true;
                    return;
                }
#pragma warning disable CA1031 // The loop is the DARQ's only sender: an unexpected error must not end delivery silently.
                catch (Exception e)
#pragma warning restore CA1031
                {
                    DarqLog.DeliveryLoopError(_logger, e, Name);
                    errorDelay = NextRetryDelay(errorDelay);
                    _deliverySignal.Writer.TryWrite(true);
                }
            }
        }
        finally
        {
            // No lane outlives the loop: each ends on the stopping token (a turn never throws).
            Task[] turns;
            lock (_lanes)
            {
                turns = [.. _lanes.Values.Select(l => l.Turn).OfType<Task>()];
            }

            await Task.WhenAll(turns).ConfigureAwait(false);
            if (turns.Length > 0)
            {
                DarqInstrumentation.DeliveryLanesActive.Add(-turns.Length, _tag);
            }

            if (fenced)
            {
                // Nothing will acknowledge a pending message here any more: waiters of WaitForDeliveredAsync look again
                // and get the fencing error instead of waiting for progress that never comes.
                await PulseDeliveryProgressAsync(CancellationToken.None).ConfigureAwait(false);
            }
        }
    }

    /// <summary>Records the turns that ended: a failed one backs its destination off (doubling), any other clears its backoff.</summary>
    private void EndTurns(ConcurrentQueue<(DeliveryLane Lane, LaneOutcome Outcome)> ended)
    {
        while (ended.TryDequeue(out var end))
        {
            var lane = end.Lane;
            lock (_lanes)
            {
                lane.Turn = null;
                if (end.Outcome == LaneOutcome.Failed)
                {
                    lane.Failures++;
                    lane.Delay = NextRetryDelay(lane.Delay);
                    lane.RetryAt = _options.TimeProvider.GetUtcNow() + lane.Delay;
                }
                else
                {
                    lane.Failures = 0;
                    lane.Delay = TimeSpan.Zero;
                }
            }

            DarqInstrumentation.DeliveryLanesActive.Add(-1, _tag);
            if (end.Outcome == LaneOutcome.Failed)
            {
                DarqLog.DeliveryBackoff(_logger, Name, lane.Destination, lane.Failures, lane.Delay);
            }
        }
    }

    /// <summary>
    /// Starts a turn for every destination in <paramref name="collected"/> that may have one, oldest pending message first,
    /// up to the bound; forgets lanes with nothing to deliver. Returns how many destinations wait for a free lane.
    /// </summary>
    private int StartTurns(IDarqDestinations destinations, List<KeyValuePair<long, PendingOut>> collected, long rebuilds,
        ConcurrentQueue<(DeliveryLane Lane, LaneOutcome Outcome)> ended, CancellationToken token)
    {
        // Per destination: its messages for a turn, or null when it gets no turn this pass (but has messages).
        var work = new Dictionary<string, List<KeyValuePair<long, PendingOut>>?>(StringComparer.Ordinal);
        var starting = new List<List<KeyValuePair<long, PendingOut>>>();
        var now = _options.TimeProvider.GetUtcNow();
        int delivering;
        lock (_lanes)
        {
            delivering = _lanes.Values.Count(l => l.Turn is not null);
        }

        int waiting = 0;
        foreach (var entry in collected)
        {
            string destination = entry.Value.Destination;
            if (work.TryGetValue(destination, out var messages))
            {
                messages?.Add(entry);
                continue;
            }

            DeliveryLane? lane;
            lock (_lanes)
            {
                _lanes.TryGetValue(destination, out lane);
            }

            // Delivering already (its turn holds its earlier messages; these wait for the next turn), backing off, or
            // parked: no turn. IsParked comes last: it lets a parked destination that is due try again.
            bool skip = lane is not null && (lane.Turn is not null || (lane.Failures > 0 && now < lane.RetryAt));
            skip = skip || IsParked(destination, entry.Key);
            if (!skip && delivering + starting.Count >= _options.MaxConcurrentDeliveries)
            {
                waiting++;
                skip = true;
            }

            messages = skip ? null : [entry];
            work[destination] = messages;
            if (messages is not null)
            {
                starting.Add(messages);
            }
        }

        lock (_lanes)
        {
            // A lane with nothing left to deliver (acknowledged, discarded, rolled back) has no backoff to keep.
            foreach (var idle in _lanes.Values.Where(l => l.Turn is null && !work.ContainsKey(l.Destination)).ToList())
            {
                _lanes.Remove(idle.Destination);
            }
        }

        ForgetParkedWithoutMessages(work);
        foreach (var messages in starting)
        {
            string destination = messages[0].Value.Destination;
            DeliveryLane? lane;
            lock (_lanes)
            {
                if (!_lanes.TryGetValue(destination, out lane))
                {
                    lane = new DeliveryLane(destination);
                    _lanes.Add(destination, lane);
                }

                Debug.Assert(lane.Turn is null, "A destination has at most one turn at a time.");
                var turnLane = lane;
                lane.CollectedAtRebuild = rebuilds;
                lane.Reordered = false;
                lane.Turn = Task.Run(() => RunTurnAsync(destinations, turnLane, messages, ended, token), CancellationToken.None);
            }

            DarqInstrumentation.DeliveryLanesActive.Add(1, _tag);
        }

        return waiting;
    }

    /// <summary>
    /// A parked destination with no deliverable message lost its refused one (discarded, rolled back): it is no longer
    /// parked, so that its due retry does not wake the loop for nothing again and again.
    /// </summary>
    private void ForgetParkedWithoutMessages(Dictionary<string, List<KeyValuePair<long, PendingOut>>?> work)
    {
        lock (_parked)
        {
            if (_parked.Count == 0)
            {
                return;
            }

            foreach (string destination in _parked.Keys.Where(d => !work.ContainsKey(d)).ToList())
            {
                bool delivering;
                lock (_lanes)
                {
                    delivering = _lanes.TryGetValue(destination, out var lane) && lane.Turn is not null;
                }

                if (!delivering)
                {
                    _parked.Remove(destination);
                }
            }
        }
    }

    /// <summary>
    /// The earliest time a lane backing off or a parked destination is due for another try; null when none is. While every
    /// lane is taken, a lane already due waits for a free one, whose end wakes the loop: it does not count then (the loop
    /// would spin). Otherwise it does: it became due after the pass, which the next pass gives it a turn.
    /// </summary>
    private DateTimeOffset? NextDeliveryDue()
    {
        var next = NextParkedRetry();
        var now = _options.TimeProvider.GetUtcNow();
        lock (_lanes)
        {
            bool full = _lanes.Values.Count(l => l.Turn is not null) >= _options.MaxConcurrentDeliveries;
            foreach (var lane in _lanes.Values)
            {
                if (lane.Turn is null && lane.Failures > 0 && (!full || lane.RetryAt > now) && (next is null || lane.RetryAt < next))
                {
                    next = lane.RetryAt;
                }
            }
        }

        return next;
    }

    /// <summary>One turn of a lane: delivers <paramref name="messages"/> (one destination's, in LSN order) until one fails, then reports how it ended and wakes the dispatcher.</summary>
    private async Task RunTurnAsync(IDarqDestinations destinations, DeliveryLane lane, List<KeyValuePair<long, PendingOut>> messages,
        ConcurrentQueue<(DeliveryLane Lane, LaneOutcome Outcome)> ended, CancellationToken token)
    {
        var outcome = LaneOutcome.Stopped;
        try
        {
            outcome = await DeliverTurnAsync(destinations, lane.Destination, messages, token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            // The DARQ closes.
        }
        catch (ObjectDisposedException) when (Volatile.Read(ref _disposed) != 0)
        {
            // The DARQ closed.
        }
        catch (Exception e) when (e is StorageFencedException || FencedException() is not null)
        {
            // Fenced: the dispatcher's next pass finds out too, stops delivery and logs it once.
        }
#pragma warning disable CA1031 // A lane must report its end whatever happened, or its destination would never get another turn.
        catch (Exception e)
#pragma warning restore CA1031
        {
            DarqLog.DeliveryLoopError(_logger, e, Name);
            outcome = LaneOutcome.Failed;
        }
        finally
        {
            ended.Enqueue((lane, outcome));
            _deliverySignal.Writer.TryWrite(true);
        }
    }

    /// <summary>Delivers one destination's messages in runs (batches) in LSN order; stops at the first run that stays pending.</summary>
    private async Task<LaneOutcome> DeliverTurnAsync(IDarqDestinations destinations, string destination, List<KeyValuePair<long, PendingOut>> messages,
        CancellationToken token)
    {
        int batchSize = _dse is null ? _options.DeliveryBatchSize : 1;
        for (int i = 0; i < messages.Count;)
        {
            KeyValuePair<long, PendingOut>[] run;
            Exception? loadError;
            try
            {
                (run, loadError) = await LoadSpilledOutAsync(TakeRun(messages, i, batchSize), token).ConfigureAwait(false);
            }
            catch (IOException e) when (!token.IsCancellationRequested && e is not StorageFencedException)
            {
                // The commit a spilled message not yet committed waits for failed (commit-record writes keep failing):
                // transient, retried with backoff.
                DarqLog.DeliveryFailed(_logger, e, Name, messages[i].Key, destination);
                return LaneOutcome.Failed;
            }

            if (run.Length == 0)
            {
                if (await SpilledOutUnreadableAsync(destination, messages[i].Key, loadError!, token).ConfigureAwait(false) is { } unread)
                {
                    return unread;
                }

                i++;
                continue;
            }

            // A run cut short by a payload that could not be read is delivered; the next one starts at that payload.
            i += run.Length;
            bool delivered = run.Length == 1
                ? await TryDeliverAsync(destinations, run[0].Key, run[0].Value, token).ConfigureAwait(false)
                : await TryDeliverBatchAsync(destinations, run, token).ConfigureAwait(false);
            if (delivered)
            {
                Unpark(destination);
                continue;
            }

            if (WasJustParked(destination))
            {
                // Waiters of WaitForDeliveredAsync on the refused message learn of the refusal.
                await PulseDeliveryProgressAsync(token).ConfigureAwait(false);
                return LaneOutcome.Parked;
            }

            lock (_lanes)
            {
                if (_lanes.TryGetValue(destination, out var lane) && lane.Reordered)
                {
                    return LaneOutcome.Reordered;
                }
            }

            return LaneOutcome.Failed;
        }

        return LaneOutcome.Delivered;
    }

    /// <summary>
    /// A lane's next message is spilled and its payload could not be read back. A message no longer pending (acknowledged,
    /// discarded or voided meanwhile, maybe truncated past) is skipped: null is returned and the turn goes on. A damaged
    /// entry parks the destination at it (an operator may discard it; the parked retry reads it again), and so do
    /// <see cref="MaxFeedReadFailures"/> failed reads in a row of the same message (a FasterLog record header FasterLog
    /// cannot parse reads as a failed read); a failed read before that backs the lane off.
    /// </summary>
    private async ValueTask<LaneOutcome?> SpilledOutUnreadableAsync(string destination, long lsn, Exception error, CancellationToken token)
    {
        if (error is ObjectDisposedException)
        {
            ExceptionDispatchInfo.Throw(error);
        }

        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            if (!_pendingOut.ContainsKey(lsn))
            {
                ForgetOutReadFailures(lsn);
                return null;
            }
        }
        finally
        {
            _gate.Release();
        }

        DarqInstrumentation.DeliveryFailures.Add(1, _tag);
        if (error is not DamagedOutEntryException && CountOutReadFailure(lsn) >= MaxFeedReadFailures)
        {
            error = new DamagedOutEntryException(lsn,
                $"DARQ '{Name}': the spilled OUT message at LSN {lsn} could not be read back from the log {MaxFeedReadFailures} times in a row: {error.Message}");
        }

        if (error is DamagedOutEntryException damaged)
        {
            ForgetOutReadFailures(lsn);
            Park(destination, damaged.Lsn, damaged.Message, damaged);
            await PulseDeliveryProgressAsync(token).ConfigureAwait(false);
            return LaneOutcome.Parked;
        }

        // Not a refusal for good: an earlier parking no longer holds, and backoff retries it.
        Unpark(destination);
        DarqLog.DeliveryFailed(_logger, error, Name, lsn, destination);
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
        while (end < messages.Count && end - start < batchSize && bytes + messages[end].Value.Length <= _options.DeliveryBatchBytes)
        {
            bytes += messages[end].Value.Length;
            end++;
        }

        var run = new KeyValuePair<long, PendingOut>[end - start];
        messages.CopyTo(start, run, 0, run.Length);
        return run;
    }

    /// <summary>How a lane's turn ended.</summary>
    private enum LaneOutcome
    {
        /// <summary>Every message of the turn was acknowledged (or was no longer pending).</summary>
        Delivered,

        /// <summary>A message stayed pending (failure, unknown destination, not yet recoverable): the lane backs off.</summary>
        Failed,

        /// <summary>The destination refused a message for good and is parked.</summary>
        Parked,

        /// <summary>The DARQ closed during the turn.</summary>
        Stopped,

        /// <summary>
        /// A restore made an earlier message pending again during the turn, which held later ones: the turn ended so that
        /// the next, at once and without backoff, starts at the earliest.
        /// </summary>
        Reordered,
    }

    /// <summary>
    /// One destination's delivery state. <c>Turn</c> is the task delivering its messages (null when none does);
    /// <c>Failures</c> counts failed turns in a row, after which it waits <c>Delay</c> (doubling up to
    /// <see cref="DarqOptions.DeliveryRetryMaxDelay"/>) until <c>RetryAt</c>. Guarded by a lock on <see cref="_lanes"/>.
    /// </summary>
    private sealed class DeliveryLane(string destination)
    {
        public string Destination { get; } = destination;

        public Task? Turn { get; set; }

        public int Failures { get; set; }

        public TimeSpan Delay { get; set; }

        public DateTimeOffset RetryAt { get; set; }

        /// <summary>How many times the pending OUT messages had been rebuilt (restores) when the turn's messages were collected.</summary>
        public long CollectedAtRebuild { get; set; }

        /// <summary>The turn ended because an earlier message became pending again (<see cref="LaneOutcome.Reordered"/>).</summary>
        public bool Reordered { get; set; }
    }
}
