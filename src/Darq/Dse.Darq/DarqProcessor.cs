using System.Diagnostics;
using System.Threading.Channels;

namespace Dse.Darq;

/// <summary>
/// A registered, co-located processor of a <see cref="Darq"/>: its incarnation, the stream of messages to step (replay
/// first, then live IN traffic) and its step entry point. A newer registration completes this stream with a
/// <see cref="DarqStaleIncarnationException"/>, and steps from this processor are refused from then on.
/// </summary>
public sealed class DarqProcessor
{
    private readonly Darq _darq;

    /// <summary>The feed of the DARQ's spilled IN backlog, which a read of the last handed message wakes (see <see cref="_read"/>).</summary>
    private readonly DarqInFeed _feed;

    /// <summary>
    /// The stream: single-reader, whose reads take no interlocked operation (a processor steps one message after another,
    /// and the multi-reader channel's dequeue was a measurable part of a consume-only step). It cannot count what waits in
    /// it, so <see cref="_handedOver"/> and <see cref="_read"/> do, for the feed of a spilled backlog (<see cref="Unread"/>).
    /// </summary>
    private readonly Channel<DarqMessage> _messages =
        Channel.CreateUnbounded<DarqMessage>(new UnboundedChannelOptions { SingleReader = true, SingleWriter = false });

    /// <summary>The stream's reader, which counts what it hands out.</summary>
    private readonly CountingReader _reader;

    /// <summary>
    /// Messages written to the stream. Writes are serialized: under the DARQ's gate, or under the lock of
    /// <see cref="_held"/> when speculation is off (each processor uses one of the two).
    /// </summary>
    private long _handedOver;

    /// <summary>
    /// Messages read from the stream (by its one reader). Invariant: a read that leaves it equal to <see cref="_handedOver"/>
    /// (the processor read everything it was handed) wakes the feed, so while IN messages are spilled a feed pass that
    /// found a message unread is always followed by one that sees it read. Without that, a processor that holds what it
    /// read unconsumed would wait for ever for spilled messages when nothing else wakes the feed (no group commit, no
    /// consumption).
    /// </summary>
    private long _read;

    /// <summary>Speculation off: messages not yet committed, in delivery order, held back until a commit covers them.</summary>
    private readonly Queue<DarqMessage>? _held;

    /// <summary>How many messages <see cref="_held"/> holds: written under its lock after the stream writes, read without it.</summary>
    private int _heldCount;

    /// <summary>The automatic checkpoint policy; null when off.</summary>
    private AutoCheckpointPolicy? _autoCheckpoint;

    /// <summary>Steps through this processor since the last automatic checkpoint attempt.</summary>
    private long _stepsSinceCheckpoint;

    private DarqCheckpointResult? _lastAutoCheckpoint;

    private Exception? _lastAutoCheckpointError;

    internal DarqProcessor(Darq darq, DarqInFeed feed, long incarnation, int replayCount, bool holdUncommitted = false, long replayEnd = long.MaxValue)
    {
        _darq = darq;
        _feed = feed;
        _reader = new CountingReader(this, _messages.Reader);
        _held = holdUncommitted ? new Queue<DarqMessage>() : null;
        Incarnation = incarnation;
        ReplayCount = replayCount;
        ReplayEnd = replayEnd;
    }

    /// <summary>The persisted incarnation number this registration received.</summary>
    public long Incarnation { get; }

    /// <summary>How many messages the replay at registration holds (SELF first, then IN); they come before any live message.</summary>
    public int ReplayCount { get; }

    /// <summary>Every IN message below this LSN was in the log at registration (replay); the ones from it on are live traffic.</summary>
    internal long ReplayEnd { get; }

    /// <summary>
    /// The messages to step; each says whether it is replay or live traffic. The stream has one reader: read it from one
    /// loop (one read at a time, from any thread), as a processor steps; concurrent reads are not supported (the DARQ's
    /// validation still refuses a message consumed twice). Its <see cref="ChannelReader{T}.Count"/> is what waits in it.
    /// </summary>
    public ChannelReader<DarqMessage> Messages => _reader;

    /// <summary>Streams the messages to step until the DARQ closes or a newer processor registers (one reader; see <see cref="Messages"/>).</summary>
    /// <param name="cancellationToken">Stops the enumeration.</param>
    public IAsyncEnumerable<DarqMessage> ReadAllAsync(CancellationToken cancellationToken = default) => _reader.ReadAllAsync(cancellationToken);

    /// <summary>
    /// Validates and appends a step under this processor's incarnation. Validation is serial: the incarnation must be
    /// current, and every consumed LSN must be an unconsumed IN or SELF message, each at most once; otherwise the whole
    /// step is refused and nothing applies. A valid step is appended as one batch (SELF messages, OUT messages, then the
    /// completion record listing the consumed LSNs), so that it is committed entirely or not at all.
    /// </summary>
    /// <param name="step">The step.</param>
    /// <param name="cancellationToken">Cancels waiting for the gate or for log memory; nothing is appended then.</param>
    /// <returns>Where the step's entries went and the address to await for durability.</returns>
    /// <exception cref="ArgumentException">The step is empty, a payload is too large, a destination name is too long, or the step does not fit on one log page.</exception>
    /// <exception cref="DarqStaleIncarnationException">A newer processor registered, or the DARQ was reopened since this one registered.</exception>
    /// <exception cref="DarqStepRejectedException">A consumed LSN failed validation.</exception>
    public ValueTask<DarqStepResult> StepAsync(DarqStep step, CancellationToken cancellationToken = default)
        => Volatile.Read(ref _autoCheckpoint) is { } policy
            ? StepThenCheckpointAsync(step, policy, cancellationToken)
            : _darq.StepAsync(Incarnation, step, cancellationToken);

    /// <summary>
    /// Consumes one message and appends nothing else: the consume-only step, the same as <see cref="StepAsync"/> with
    /// <c>new DarqStep().Consume(lsn)</c> (the same validation, errors and log bytes), without a step object and with an
    /// 8-byte result. It is the fastest way to acknowledge a message that produces nothing.
    /// </summary>
    /// <param name="lsn">The IN or SELF message to consume (<see cref="DarqMessage.Lsn"/>).</param>
    /// <param name="cancellationToken">Cancels waiting for the gate or for log memory; nothing is appended then.</param>
    /// <returns>Where the completion record went and the address to await for durability.</returns>
    /// <exception cref="DarqStaleIncarnationException">A newer processor registered, or the DARQ was reopened since this one registered.</exception>
    /// <exception cref="DarqStepRejectedException">The message is not an unconsumed IN or SELF message.</exception>
    public ValueTask<DarqConsumeResult> ConsumeAsync(long lsn, CancellationToken cancellationToken = default)
        => Volatile.Read(ref _autoCheckpoint) is { } policy
            ? ConsumeThenCheckpointAsync(lsn, policy, cancellationToken)
            : _darq.ConsumeAsync(Incarnation, lsn, cancellationToken);

    /// <summary>
    /// Validates and appends several steps at once, as if stepped one by one in order with <see cref="StepAsync"/> (the
    /// same entries, sequence numbers and results), but under one acquisition of the DARQ's gate and as few log appends as
    /// fit: consecutive steps go into one FasterLog batch as long as it fits on one log page.
    /// </summary>
    /// <param name="steps">The steps, in order; none may be empty, each must fit on one log page on its own.</param>
    /// <param name="cancellationToken">
    /// Cancels waiting for the gate or for log memory before anything is appended; once the first steps are appended the
    /// rest of the batch is appended too.
    /// </param>
    /// <remarks>
    /// <para>The batch is refused whole: the steps are validated serially, in order, each against the state the earlier
    /// ones leave (so a later step may not consume what an earlier step of the batch consumed: it is refused with
    /// <see cref="DarqStepRejection.AlreadyConsumed"/>), and if any step is refused nothing of the batch is appended.</para>
    /// <para>Under general speculation the whole batch runs in one LibDse action: every OUT message of the batch is sent
    /// with that action's header.</para>
    /// </remarks>
    /// <exception cref="ArgumentException">The batch is empty or holds a null step, or a step is invalid (the message names the step's index).</exception>
    /// <exception cref="DarqStaleIncarnationException">A newer processor registered, or the DARQ was reopened since this one registered.</exception>
    /// <exception cref="DarqStepRejectedException">A consumed LSN of some step failed validation; nothing of the batch was appended.</exception>
    /// <returns>Each step's result, in order.</returns>
    public ValueTask<IReadOnlyList<DarqStepResult>> StepBatchAsync(IReadOnlyList<DarqStep> steps, CancellationToken cancellationToken = default)
        => Volatile.Read(ref _autoCheckpoint) is { } policy
            ? StepBatchThenCheckpointAsync(steps, policy, cancellationToken)
            : _darq.StepBatchAsync(Incarnation, steps, cancellationToken);

    /// <summary>
    /// Waits for at least one message, then adds to <paramref name="buffer"/> every message already available, up to
    /// <paramref name="maxCount"/>, without waiting again: the messages for one <see cref="StepBatchAsync"/>.
    /// </summary>
    /// <param name="buffer">Receives the messages, in stream order (appended after what it holds).</param>
    /// <param name="maxCount">The most messages to add, at least 1.</param>
    /// <param name="cancellationToken">Cancels waiting for the first message.</param>
    /// <returns>How many messages were added; 0 once the stream is complete (the DARQ closed).</returns>
    /// <exception cref="DarqStaleIncarnationException">A newer processor registered, and every message before that was read.</exception>
    public async ValueTask<int> ReadAvailableAsync(ICollection<DarqMessage> buffer, int maxCount, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(buffer);
        ArgumentOutOfRangeException.ThrowIfLessThan(maxCount, 1);
        var reader = _reader;
        while (true)
        {
            int count = 0;
            while (count < maxCount && reader.TryRead(out var message))
            {
                buffer.Add(message);
                count++;
            }

            if (count > 0 || !await reader.WaitToReadAsync(cancellationToken).ConfigureAwait(false))
            {
                return count;
            }
        }
    }

    /// <summary>How many messages were handed over and not read yet (held ones not counted); 0 once everything handed over was read.</summary>
    internal int Unread => (int)Math.Max(0, Volatile.Read(ref _handedOver) - Volatile.Read(ref _read));

    /// <summary>
    /// Whether the processor read everything it was given: nothing unread in the stream and, with speculation off, nothing
    /// held for its commit. The held count is read first: a release writes the stream before it lowers that count.
    /// </summary>
    internal bool ReadEverything => Volatile.Read(ref _heldCount) == 0 && Unread == 0;

    /// <summary>The DARQ this processor is registered with.</summary>
    internal Darq Darq => _darq;

    /// <summary>Called under the DARQ's gate, in log order.</summary>
    internal void Deliver(DarqMessage message)
    {
        if (_held is null)
        {
            Write(message);
            return;
        }

        lock (_held)
        {
            // Order is kept: once one message waits for its commit, every later one waits behind it.
            _held.Enqueue(message);
            ReleaseUnderLock();
        }
    }

    /// <summary>Speculation off: hands the processor every held message the log's commit now covers (called after each commit).</summary>
    internal void ReleaseCommitted()
    {
        if (_held is null)
        {
            return;
        }

        lock (_held)
        {
            ReleaseUnderLock();
        }
    }

    private void ReleaseUnderLock()
    {
        // Read under the lock: a commit that lands after this read calls ReleaseCommitted, which runs after us.
        long committed = _darq.CommittedUntilAddress;
        while (_held!.TryPeek(out var next) && next.Lsn < committed)
        {
            Write(_held.Dequeue());
        }

        Volatile.Write(ref _heldCount, _held.Count);
    }

    /// <summary>Writes a message to the stream, counted first so that the count read never trails what can be read; writes are serialized (see <see cref="_handedOver"/>).</summary>
    private void Write(DarqMessage message)
    {
        Volatile.Write(ref _handedOver, _handedOver + 1);
        if (!_messages.Writer.TryWrite(message))
        {
            // The stream is complete (superseded or closed): nothing more will be read.
            Volatile.Write(ref _handedOver, _handedOver - 1);
        }
    }

    internal void Supersede(string darqName, long newIncarnation)
        => _messages.Writer.TryComplete(new DarqStaleIncarnationException(darqName, Incarnation, newIncarnation));

    internal void Close() => _messages.Writer.TryComplete();

    /// <summary>Ends the stream with <paramref name="error"/> after the messages already in it (a spilled message that cannot be read back).</summary>
    internal void Fail(Exception error) => _messages.Writer.TryComplete(error);

    /// <summary>The single-reader stream's reader, counting each message it hands out (for <see cref="Unread"/>).</summary>
    private sealed class CountingReader(DarqProcessor owner, ChannelReader<DarqMessage> inner) : ChannelReader<DarqMessage>
    {
        public override Task Completion => inner.Completion;

        public override bool CanCount => true;

        public override int Count => owner.Unread;

        public override bool CanPeek => inner.CanPeek;

        public override bool TryRead(out DarqMessage item)
        {
            if (!inner.TryRead(out item))
            {
                return false;
            }

            NoteRead();
            return true;
        }

        /// <summary>The channel's own read, so that a completed stream's error comes wrapped as the channel wraps it.</summary>
        public override ValueTask<DarqMessage> ReadAsync(CancellationToken cancellationToken = default)
        {
            var pending = inner.ReadAsync(cancellationToken);
            if (pending.IsCompletedSuccessfully)
            {
                NoteRead();
                return pending;
            }

            return CountWhenReadAsync(pending);
        }

        public override bool TryPeek(out DarqMessage item) => inner.TryPeek(out item);

        public override ValueTask<bool> WaitToReadAsync(CancellationToken cancellationToken = default) => inner.WaitToReadAsync(cancellationToken);

        private async ValueTask<DarqMessage> CountWhenReadAsync(ValueTask<DarqMessage> pending)
        {
            var message = await pending.ConfigureAwait(false);
            NoteRead();
            return message;
        }

        /// <summary>Counts a read; the read of the last handed message wakes the feed (the invariant at <see cref="_read"/>).</summary>
        private void NoteRead()
        {
            // One reader: no other thread writes this count. Handed-over counts are written before the message, so the
            // one read here is at least the read count: equal means nothing more waits in the stream.
            long read = owner._read + 1;
            Volatile.Write(ref owner._read, read);
            long handedOver = Volatile.Read(ref owner._handedOver);
            Debug.Assert(read <= handedOver, "a message is read only after it was counted as handed over");
            if (read == handedOver)
            {
                // No allocation: returns at once when nothing is spilled, else one TryWrite on the feed's single-slot
                // channel (dropped when a wake-up is pending already, whose pass runs after this read).
                owner._feed.Signal();
            }
        }
    }

    /// <summary>The last automatic checkpoint that compacted something (its snapshot's LSNs); null before the first.</summary>
    public DarqCheckpointResult? LastAutoCheckpoint => Volatile.Read(ref _lastAutoCheckpoint);

    /// <summary>
    /// Why the last automatic checkpoint attempt failed (also logged, event 4203); null before any failure and again after
    /// the next attempt that succeeds.
    /// </summary>
    public Exception? LastAutoCheckpointError => Volatile.Read(ref _lastAutoCheckpointError);

    /// <summary>
    /// Turns on automatic checkpoints: after every <paramref name="everySteps"/>-th step through this processor; the same
    /// as <see cref="EnableAutoCheckpoint(DarqCheckpointPolicy, DarqSnapshot)"/> with only
    /// <see cref="DarqCheckpointPolicy.EverySteps"/> set.
    /// </summary>
    /// <param name="everySteps">How many steps between checkpoints, at least 1.</param>
    /// <param name="snapshot">Turns the unconsumed plain SELF messages into their replacement.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="everySteps"/> is below 1.</exception>
    public void EnableAutoCheckpoint(int everySteps, DarqSnapshot snapshot)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(everySteps, 1);
        EnableAutoCheckpoint(new DarqCheckpointPolicy { EverySteps = everySteps }, snapshot);
    }

    /// <summary>
    /// Turns on automatic checkpoints: after a step through this processor (a batch counts as its number of steps, the
    /// checkpoint running after the batch) that reaches any threshold of <paramref name="policy"/>,
    /// <see cref="CheckpointAsync(DarqSnapshot, CancellationToken)"/> with <paramref name="snapshot"/> runs right after the
    /// step (serialized by the DARQ like any step). Suited to processors that keep their state as SELF deltas and never
    /// consume their own SELF messages in steps: the snapshot function sees every message it replaces, and
    /// <see cref="LastAutoCheckpoint"/> gives the replacement's LSNs. Replaces an earlier policy.
    /// </summary>
    /// <param name="policy">The thresholds (validated here); it is immutable, so it may be shared.</param>
    /// <param name="snapshot">Turns the unconsumed plain SELF messages into their replacement.</param>
    /// <exception cref="ArgumentException">The policy sets no threshold, or one below 1 (the message names it); nothing changes.</exception>
    /// <remarks>
    /// The step's result is returned whatever the checkpoint does: a failed automatic checkpoint (the snapshot function
    /// threw, or the processor was superseded) is logged (event 4203) and changes nothing. It is tried again after the
    /// next step that reaches a threshold: with <see cref="DarqCheckpointPolicy.EverySteps"/>, that many steps later;
    /// with a SELF threshold, which a failed checkpoint leaves reached, after the next step.
    /// </remarks>
    public void EnableAutoCheckpoint(DarqCheckpointPolicy policy, DarqSnapshot snapshot)
    {
        ArgumentNullException.ThrowIfNull(policy);
        ArgumentNullException.ThrowIfNull(snapshot);
        policy.Validate();
        Interlocked.Exchange(ref _stepsSinceCheckpoint, 0);
        Volatile.Write(ref _autoCheckpoint, new AutoCheckpointPolicy(policy, snapshot));
    }

    /// <summary>Turns automatic checkpoints off.</summary>
    public void DisableAutoCheckpoint() => Volatile.Write(ref _autoCheckpoint, null);

    private async ValueTask<DarqStepResult> StepThenCheckpointAsync(DarqStep step, AutoCheckpointPolicy policy, CancellationToken cancellationToken)
    {
        var result = await _darq.StepAsync(Incarnation, step, cancellationToken).ConfigureAwait(false);
        await CheckpointIfDueAsync(1, policy).ConfigureAwait(false);
        return result;
    }

    private async ValueTask<DarqConsumeResult> ConsumeThenCheckpointAsync(long lsn, AutoCheckpointPolicy policy, CancellationToken cancellationToken)
    {
        var result = await _darq.ConsumeAsync(Incarnation, lsn, cancellationToken).ConfigureAwait(false);
        await CheckpointIfDueAsync(1, policy).ConfigureAwait(false);
        return result;
    }

    private async ValueTask<IReadOnlyList<DarqStepResult>> StepBatchThenCheckpointAsync(IReadOnlyList<DarqStep> steps, AutoCheckpointPolicy policy,
        CancellationToken cancellationToken)
    {
        var results = await _darq.StepBatchAsync(Incarnation, steps, cancellationToken).ConfigureAwait(false);
        await CheckpointIfDueAsync(results.Count, policy).ConfigureAwait(false);
        return results;
    }

    /// <summary>Counts <paramref name="steps"/> appended steps and takes the automatic checkpoint when it is due.</summary>
    private async ValueTask CheckpointIfDueAsync(int steps, AutoCheckpointPolicy policy)
    {
        long since = Interlocked.Add(ref _stepsSinceCheckpoint, steps);
        if (policy.Thresholds.Reached(since, _darq.UnconsumedSelfCount, _darq.UnconsumedSelfBytes) is { } reached)
        {
            Interlocked.Exchange(ref _stepsSinceCheckpoint, 0);
            _darq.AutoCheckpointDue(Incarnation, reached);
            try
            {
                // Not cancellable: the step is appended, and the caller's cancellation must not look like a failed step.
                var checkpoint = await _darq.CheckpointAsync(Incarnation, policy.Snapshot, CancellationToken.None).ConfigureAwait(false);
                if (checkpoint.CheckpointLsn >= 0)
                {
                    Volatile.Write(ref _lastAutoCheckpoint, checkpoint);
                }

                Volatile.Write(ref _lastAutoCheckpointError, null);
            }
#pragma warning disable CA1031 // The step succeeded; a failed automatic checkpoint is logged and retried later, not reported as the step's failure.
            catch (Exception e)
#pragma warning restore CA1031
            {
                Volatile.Write(ref _lastAutoCheckpointError, e);
                _darq.AutoCheckpointFailed(e, Incarnation);
            }
        }
    }

    private sealed record AutoCheckpointPolicy(DarqCheckpointPolicy Thresholds, DarqSnapshot Snapshot);

    /// <summary>
    /// Compacts every unconsumed plain SELF message (activities are left alone) through <paramref name="snapshot"/>, under
    /// this processor's incarnation: the messages it returns replace them, atomically (the snapshot's SELF entries and a
    /// CHECKPOINT record naming the replaced LSNs, in one batch). With no SELF message to compact, nothing is appended and
    /// the snapshot function is not called. The snapshot function runs under the DARQ's gate.
    /// </summary>
    /// <param name="snapshot">Turns the SELF messages into their replacement (e.g. the processor's state as one message).</param>
    /// <param name="cancellationToken">Cancels waiting for earlier steps; an appended checkpoint is not undone.</param>
    /// <returns>The replaced LSNs and the LSNs of the snapshot's SELF messages (which replace them in this processor's bookkeeping).</returns>
    /// <remarks>
    /// Take it after the replay has been read: replayed SELF messages still in <see cref="Messages"/> may have been replaced.
    /// A step running at the same time that consumes a replaced SELF message is refused (it was consumed by the checkpoint).
    /// </remarks>
    public ValueTask<DarqCheckpointResult> CheckpointAsync(DarqSnapshot snapshot, CancellationToken cancellationToken = default)
        => _darq.CheckpointAsync(Incarnation, snapshot, cancellationToken);

    /// <summary>
    /// Replaces the named SELF messages by <paramref name="snapshot"/>, atomically, under this processor's incarnation.
    /// Validated like a step: every replaced LSN must be an unconsumed plain SELF message (not an IN message or an
    /// activity), named once; otherwise the checkpoint is refused whole and nothing changes.
    /// </summary>
    /// <param name="replace">The SELF messages to replace.</param>
    /// <param name="snapshot">The replacing SELF payloads.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier steps; an appended checkpoint is not undone.</param>
    /// <returns>The replaced LSNs and the LSNs of the snapshot's SELF messages.</returns>
    public ValueTask<DarqCheckpointResult> CheckpointAsync(IReadOnlyList<long> replace, IReadOnlyList<ReadOnlyMemory<byte>> snapshot,
        CancellationToken cancellationToken = default)
        => _darq.CheckpointAsync(Incarnation, replace, snapshot, cancellationToken);
}
