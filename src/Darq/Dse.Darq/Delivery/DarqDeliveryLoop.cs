using System.Collections.Concurrent;
using System.Diagnostics;
using System.Threading.Channels;
using Dse.Storage;

namespace Dse.Darq;

/// <summary>
/// The dispatcher of OUT delivery: on every wake-up (a commit, an acknowledgement, a lane's end, or when a backoff or
/// parked destination is due) it ends the turns lanes reported, finds the deliverable OUT messages, and starts a turn
/// (<see cref="DarqSender"/>) for each destination that has some and is not delivering, backing off, parked, or beyond
/// <see cref="DarqOptions.MaxConcurrentDeliveries"/>. A destination that is slow, down or backing off holds up only its
/// own lane; a lane is a task only while it delivers.
/// </summary>
/// <remarks>
/// Invariant: a destination has at most one turn at a time, so its messages leave in LSN order, which the destination's
/// "largest LSN seen" deduplication needs. <see cref="_lanes"/> is written by the dispatcher only, under a lock on
/// itself so that <see cref="Lanes"/> can read it; the lock is never taken inside the parked table's.
/// </remarks>
internal sealed class DarqDeliveryLoop
{
    private readonly DarqCore _core;
    private readonly DarqOutbox _outbox;
    private readonly DarqParkedDestinations _parked;
    private readonly DarqAcknowledger _acknowledger;
    private readonly DarqSpeculation _speculation;
    private readonly DarqSender _sender;

    /// <summary>Wakes the loop (capacity 1: a pending wake-up covers any number of reasons).</summary>
    private readonly Channel<bool> _signal = Channel.CreateBounded<bool>(
        new BoundedChannelOptions(1) { FullMode = BoundedChannelFullMode.DropWrite, SingleReader = true });

    /// <summary>The destinations with a lane: delivering now, or backing off after failed attempts.</summary>
    private readonly Dictionary<string, OutLane> _lanes = new(StringComparer.Ordinal);

    /// <summary>1 while destinations wait for a free lane: a turn then ends once its collected messages are delivered.</summary>
    private int _lanesWanted;

    private Task _loop = Task.CompletedTask;

    public DarqDeliveryLoop(DarqCore core, DarqOutbox outbox, DarqParkedDestinations parked, DarqAcknowledger acknowledger, DarqSpeculation speculation,
        DarqSender sender)
    {
        _core = core;
        _outbox = outbox;
        _parked = parked;
        _acknowledger = acknowledger;
        _speculation = speculation;
        _sender = sender;
    }

    /// <summary>The loop, once started; ends when the DARQ closes.</summary>
    public Task Loop => _loop;

    /// <summary>
    /// The destinations the loop is working on: those delivering now, and those waiting after failed attempts (with the
    /// time of their next try).
    /// </summary>
    public IReadOnlyList<DarqDeliveryLane> Lanes
    {
        get
        {
            lock (_lanes)
            {
                return [.. _lanes.Values.Where(l => l.Turn is not null || l.Failures > 0).Select(l => new DarqDeliveryLane(l.Destination, l.Turn is not null, l.Failures, l.Failures > 0 ? l.RetryAt : null))];
            }
        }
    }

    /// <summary>Starts delivering to <paramref name="destinations"/>; the first pass sends what recovery found committed and pending.</summary>
    public void Start(IDarqDestinations destinations)
    {
        Signal();
        _loop = RunAsync(destinations);
    }

    /// <summary>Wakes the loop.</summary>
    public void Signal() => _signal.Writer.TryWrite(true);

    /// <summary>What a pass would collect now, as (LSN, destination) in collection order; for tests.</summary>
    public async ValueTask<List<(long Lsn, string Destination)>> CollectForTestAsync()
    {
        var batch = new List<KeyValuePair<long, PendingOut>>();
        await CollectAsync(batch, CancellationToken.None).ConfigureAwait(false);
        return batch.ConvertAll(e => (e.Key, e.Value.Destination));
    }

    private async Task RunAsync(IDarqDestinations destinations)
    {
        var token = _core.Stopping;
        var ended = new ConcurrentQueue<(OutLane Lane, LaneOutcome Outcome)>();
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
                        await Task.Delay(errorDelay, _core.Options.TimeProvider, token).ConfigureAwait(false);
                    }

                    await WaitForSignalAsync(NextDue(), token).ConfigureAwait(false);
                    EndTurns(ended);
                    long rebuilds = await CollectAsync(collected, token).ConfigureAwait(false);
                    int waiting = StartTurns(destinations, collected, rebuilds, ended, token);
                    Volatile.Write(ref _lanesWanted, waiting > 0 ? 1 : 0);
                    if (waiting != waitingLogged)
                    {
                        waitingLogged = waiting;
                        if (waiting > 0)
                        {
                            DarqLogMessages.DeliveryLanesFull(_core.Logger, _core.Name, _core.Options.MaxConcurrentDeliveries, waiting);
                        }
                    }

                    errorDelay = TimeSpan.Zero;
                }
                catch (OperationCanceledException) when (token.IsCancellationRequested)
                {
                    return;
                }
                catch (ObjectDisposedException) when (_core.IsClosed)
                {
                    return;
                }
                catch (Exception e) when (e is StorageFencedException || _core.FencedException() is not null)
                {
                    // Another instance owns the storage: no acknowledgement can be recorded here again, and that
                    // instance delivers the pending messages itself. Retrying would only log the same error forever.
                    DarqLogMessages.DeliveryLoopFenced(_core.Logger, e, _core.Name);
                    fenced = true;
                    return;
                }
#pragma warning disable CA1031 // The loop is the DARQ's only sender: an unexpected error must not end delivery silently.
                catch (Exception e)
#pragma warning restore CA1031
                {
                    DarqLogMessages.DeliveryLoopError(_core.Logger, e, _core.Name);
                    errorDelay = _core.Options.NextRetryDelay(errorDelay);
                    Signal();
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
                DarqInstrumentation.DeliveryLanesActive.Add(-turns.Length, _core.Tag);
            }

            if (fenced)
            {
                // Nothing will acknowledge a pending message here any more: waiters of WaitForDeliveredAsync look again
                // and get the fencing error instead of waiting for progress that never comes.
                await _acknowledger.PulseProgressAsync(CancellationToken.None).ConfigureAwait(false);
            }
        }
    }

    /// <summary>
    /// Collects, under the gate, the deliverable OUT messages: for each destination its earliest pending messages in LSN
    /// order, the destinations oldest pending message first. Returns the rebuild count the collection belongs to.
    /// </summary>
    private async ValueTask<long> CollectAsync(List<KeyValuePair<long, PendingOut>> batch, CancellationToken cancellationToken)
    {
        batch.Clear();
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            _outbox.Collect(batch, _speculation.DeliverableBelow, _sender.CollectionLimit);
            return _outbox.Rebuilds;
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>Waits for a signal, or until <paramref name="until"/> (a backoff or parked destination's next try) when it is set.</summary>
    private async ValueTask WaitForSignalAsync(DateTimeOffset? until, CancellationToken token)
    {
        if (until is not { } due)
        {
            await _signal.Reader.ReadAsync(token).ConfigureAwait(false);
            return;
        }

        var time = _core.Options.TimeProvider;
        var wait = due - time.GetUtcNow();
        if (wait <= TimeSpan.Zero)
        {
            _signal.Reader.TryRead(out _);
            return;
        }

        using var timeout = new CancellationTokenSource(wait, time);
        if (time.GetUtcNow() >= due)
        {
            // The clock passed the due time while the timer was made, which counts its delay from then: it would be late.
            _signal.Reader.TryRead(out _);
            return;
        }

        using var linked = CancellationTokenSource.CreateLinkedTokenSource(token, timeout.Token);
        try
        {
            await _signal.Reader.ReadAsync(linked.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (!token.IsCancellationRequested)
        {
            // A destination is due: a pass tries it again.
        }
    }

    /// <summary>Records the turns that ended: a failed one backs its destination off (doubling), any other clears its backoff.</summary>
    private void EndTurns(ConcurrentQueue<(OutLane Lane, LaneOutcome Outcome)> ended)
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
                    lane.Delay = _core.Options.NextRetryDelay(lane.Delay);
                    lane.RetryAt = _core.Options.TimeProvider.GetUtcNow() + lane.Delay;
                }
                else
                {
                    lane.Failures = 0;
                    lane.Delay = TimeSpan.Zero;
                }
            }

            DarqInstrumentation.DeliveryLanesActive.Add(-1, _core.Tag);
            if (end.Outcome == LaneOutcome.Failed)
            {
                DarqLogMessages.DeliveryBackoff(_core.Logger, _core.Name, lane.Destination, lane.Failures, lane.Delay);
            }
        }
    }

    /// <summary>
    /// Starts a turn for every destination in <paramref name="collected"/> that may have one, oldest pending message first,
    /// up to the bound; forgets lanes with nothing to deliver. Returns how many destinations wait for a free lane.
    /// </summary>
    private int StartTurns(IDarqDestinations destinations, List<KeyValuePair<long, PendingOut>> collected, long rebuilds,
        ConcurrentQueue<(OutLane Lane, LaneOutcome Outcome)> ended, CancellationToken token)
    {
        // Per destination: its messages for a turn, or null when it gets no turn this pass (but has messages).
        var work = new Dictionary<string, List<KeyValuePair<long, PendingOut>>?>(StringComparer.Ordinal);
        var starting = new List<List<KeyValuePair<long, PendingOut>>>();
        var now = _core.Options.TimeProvider.GetUtcNow();
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

            OutLane? lane;
            lock (_lanes)
            {
                _lanes.TryGetValue(destination, out lane);
            }

            // Delivering already (its turn holds its earlier messages; these wait for the next turn), backing off, or
            // parked: no turn. Holds comes last: it lets a parked destination that is due try again.
            bool skip = lane is not null && (lane.Turn is not null || (lane.Failures > 0 && now < lane.RetryAt));
            skip = skip || _parked.Holds(destination, entry.Key);
            if (!skip && delivering + starting.Count >= _core.Options.MaxConcurrentDeliveries)
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

        // A parked destination with no deliverable message lost its refused one (discarded, rolled back): it is no longer
        // parked, so that its due retry does not wake the loop for nothing again and again.
        _parked.ForgetWithout(work.ContainsKey, IsDelivering);
        foreach (var messages in starting)
        {
            string destination = messages[0].Value.Destination;
            lock (_lanes)
            {
                if (!_lanes.TryGetValue(destination, out var lane))
                {
                    lane = new OutLane(destination);
                    _lanes.Add(destination, lane);
                }

                Debug.Assert(lane.Turn is null, "A destination has at most one turn at a time.");
                var turnLane = lane;
                lane.CollectedAtRebuild = rebuilds;
                lane.Turn = Task.Run(() => RunTurnAsync(destinations, turnLane, messages, ended, token), CancellationToken.None);
            }

            DarqInstrumentation.DeliveryLanesActive.Add(1, _core.Tag);
        }

        return waiting;
    }

    private bool IsDelivering(string destination)
    {
        lock (_lanes)
        {
            return _lanes.TryGetValue(destination, out var lane) && lane.Turn is not null;
        }
    }

    /// <summary>
    /// The earliest time a lane backing off or a parked destination is due for another try; null when none is. While every
    /// lane is taken, a lane already due waits for a free one, whose end wakes the loop: it does not count then (the loop
    /// would spin). Otherwise it does: it became due after the pass, which the next pass gives it a turn.
    /// </summary>
    private DateTimeOffset? NextDue()
    {
        var next = _parked.NextRetry();
        var now = _core.Options.TimeProvider.GetUtcNow();
        lock (_lanes)
        {
            bool full = _lanes.Values.Count(l => l.Turn is not null) >= _core.Options.MaxConcurrentDeliveries;
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

    /// <summary>One turn of a lane: delivers, then reports how it ended and wakes the dispatcher.</summary>
    private async Task RunTurnAsync(IDarqDestinations destinations, OutLane lane, List<KeyValuePair<long, PendingOut>> messages,
        ConcurrentQueue<(OutLane Lane, LaneOutcome Outcome)> ended, CancellationToken token)
    {
        var outcome = LaneOutcome.Stopped;
        try
        {
            outcome = await _sender.DeliverTurnAsync(destinations, lane, messages, KeepGoing, token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            // The DARQ closes.
        }
        catch (ObjectDisposedException) when (_core.IsClosed)
        {
            // The DARQ closed.
        }
        catch (Exception e) when (e is StorageFencedException || _core.FencedException() is not null)
        {
            // Fenced: the dispatcher's next pass finds out too, stops delivery and logs it once.
        }
#pragma warning disable CA1031 // A lane must report its end whatever happened, or its destination would never get another turn.
        catch (Exception e)
#pragma warning restore CA1031
        {
            DarqLogMessages.DeliveryLoopError(_core.Logger, e, _core.Name);
            outcome = LaneOutcome.Failed;
        }
        finally
        {
            ended.Enqueue((lane, outcome));
            Signal();
        }
    }

    /// <summary>Whether a turn that delivered its collected messages goes on with its destination's next ones: not while others wait for a lane.</summary>
    private bool KeepGoing() => Volatile.Read(ref _lanesWanted) == 0;
}
