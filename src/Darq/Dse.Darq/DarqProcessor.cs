using System.Threading.Channels;

namespace Dse.Darq;

/// <summary>
/// A registered, co-located processor of a <see cref="Darq"/>: its incarnation, the stream of messages to step (replay
/// first, then live IN traffic) and its step entry point. A newer registration completes this stream with a
/// <see cref="DarqStaleIncarnationException"/>, and steps from this processor are refused from then on.
/// </summary>
public sealed partial class DarqProcessor
{
    private readonly Darq _darq;

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

    /// <summary>Messages read from the stream (by its one reader).</summary>
    private long _read;

    /// <summary>Speculation off: messages not yet committed, in delivery order, held back until a commit covers them.</summary>
    private readonly Queue<DarqMessage>? _held;

    internal DarqProcessor(Darq darq, long incarnation, int replayCount, bool holdUncommitted = false, long replayEnd = long.MaxValue)
    {
        _darq = darq;
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

    /// <summary>Steps under this processor's incarnation; see <see cref="Darq.StepAsync"/>.</summary>
    /// <param name="step">The step.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier steps; an appended step is not undone.</param>
    public ValueTask<DarqStepResult> StepAsync(DarqStep step, CancellationToken cancellationToken = default)
        => Volatile.Read(ref _autoCheckpoint) is { } policy
            ? StepThenCheckpointAsync(step, policy, cancellationToken)
            : _darq.StepAsync(Incarnation, step, cancellationToken);

    /// <summary>
    /// Consumes one message and appends nothing else: the consume-only step, the same as
    /// <see cref="StepAsync"/> with <c>new DarqStep().Consume(lsn)</c> (the same validation, errors and log bytes), without
    /// a step object and with an 8-byte result. See <see cref="Darq.ConsumeAsync"/>.
    /// </summary>
    /// <param name="lsn">The IN or SELF message to consume.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier steps; an appended step is not undone.</param>
    /// <returns>Where the completion record went and the address to await for durability.</returns>
    public ValueTask<DarqConsumeResult> ConsumeAsync(long lsn, CancellationToken cancellationToken = default)
        => Volatile.Read(ref _autoCheckpoint) is { } policy
            ? ConsumeThenCheckpointAsync(lsn, policy, cancellationToken)
            : _darq.ConsumeAsync(Incarnation, lsn, cancellationToken);

    /// <summary>Consumes a streamed message and appends nothing else; see <see cref="ConsumeAsync(long, CancellationToken)"/>.</summary>
    /// <param name="message">The message.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier steps; an appended step is not undone.</param>
    /// <returns>Where the completion record went and the address to await for durability.</returns>
    public ValueTask<DarqConsumeResult> ConsumeAsync(DarqMessage message, CancellationToken cancellationToken = default)
        => ConsumeAsync(message.Lsn, cancellationToken);

    /// <summary>
    /// Steps several steps at once under this processor's incarnation: one gate acquisition and, while they fit on a log
    /// page, one log append for all of them; refused whole if any step is refused. See <see cref="Darq.StepBatchAsync"/>.
    /// </summary>
    /// <param name="steps">The steps, in order.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier steps; once part of the batch is appended, all of it is.</param>
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

        // One reader: no other thread writes this count.
        private void NoteRead() => Volatile.Write(ref owner._read, owner._read + 1);
    }
}
