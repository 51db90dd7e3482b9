using System.Threading.Channels;
using Dse.Storage;
using FASTER.core;

namespace Dse.Darq;

/// <summary>
/// The IN backlog beyond memory: an IN message that arrives when <see cref="DarqOptions.MaxBufferedInBytes"/> is used up
/// (or while older ones already wait in the log only) is <em>spilled</em>: the DARQ keeps its LSN, step and length but
/// not its payload. The feed loop reads spilled payloads back from the log, oldest first and once committed, as the
/// processor consumes what it was handed, and hands them over in LSN order.
/// </summary>
/// <remarks>
/// Invariant (under the gate): in LSN order every buffered (in-memory) unconsumed IN message precedes every spilled one,
/// because a message is buffered only while none is spilled and the feed loop buffers spilled ones oldest first. With a
/// processor registered, every buffered IN message has been handed to it, so the processor's stream stays in LSN order
/// with no gap: the enqueue path hands a message over itself only while nothing is spilled.
/// </remarks>
public sealed partial class Darq
{
    /// <summary>The most spilled messages the feed loop reads back in one pass.</summary>
    private const int MaxFeedChunk = 4096;

    /// <summary>Failed reads in a row of the same spilled message after which the processor's stream ends with the error.</summary>
    private const int MaxFeedReadFailures = 8;

    /// <summary>Wakes the feed loop: a spill while a processor is registered, a registration, a commit, a consumed message.</summary>
    private readonly Channel<bool> _feedSignal = Channel.CreateBounded<bool>(
        new BoundedChannelOptions(1) { FullMode = BoundedChannelFullMode.DropWrite, SingleReader = true });

    /// <summary>Payload bytes of the buffered unconsumed IN messages; under the gate, read without it.</summary>
    private long _bufferedInBytes;

    /// <summary>Unconsumed IN messages whose payload is in the log only; under the gate, read without it.</summary>
    private int _spilledInCount;

    /// <summary>At or below the LSN of the oldest spilled IN message (while any is); under the gate.</summary>
    private long _feedFrom;

    private Task _feedLoop = Task.CompletedTask;

    /// <summary>The processor whose stream the feed loop ended with a damaged spilled entry; it is fed no more.</summary>
    private DarqProcessor? _feedFailed;

    /// <summary>
    /// The payload bytes of the IN messages held in memory (unconsumed, handed to the processor or waiting for one): at
    /// most <see cref="DarqOptions.MaxBufferedInBytes"/> but for one message, plus what the processor read and holds
    /// unconsumed when it is given more (see the option).
    /// </summary>
    public long BufferedInBytes => Volatile.Read(ref _bufferedInBytes);

    /// <summary>How many unconsumed IN messages wait in the log only, to be read back when the processor gets to them.</summary>
    public int SpilledInCount => Volatile.Read(ref _spilledInCount);

    /// <summary>Whether an IN message of <paramref name="length"/> payload bytes may be buffered: the budget allows it and nothing older is spilled. Under the gate.</summary>
    private bool MayBufferIn(int length) => _spilledInCount == 0 && _bufferedInBytes + length <= _options.MaxBufferedInBytes;

    /// <summary>An unconsumed IN message appended at <paramref name="start"/> whose payload stays in the log only.</summary>
    private static PendingMessage SpilledIn(StepStart start, int length) => new(DarqMessageKind.In, start, ReadOnlyMemory<byte>.Empty, length);

    /// <summary>Counts an IN message added to <see cref="_unconsumed"/>; under the gate.</summary>
    private void CountInAdded(long lsn, in PendingMessage message)
    {
        if (message.IsSpilled)
        {
            if (_spilledInCount == 0 || lsn < _feedFrom)
            {
                _feedFrom = lsn;
            }

            Volatile.Write(ref _spilledInCount, _spilledInCount + 1);
        }
        else
        {
            Volatile.Write(ref _bufferedInBytes, _bufferedInBytes + message.Payload.Length);
        }
    }

    /// <summary>Uncounts an IN message removed from <see cref="_unconsumed"/>; under the gate.</summary>
    private void CountInRemoved(in PendingMessage message)
    {
        if (message.IsSpilled)
        {
            Volatile.Write(ref _spilledInCount, _spilledInCount - 1);
            return;
        }

        Volatile.Write(ref _bufferedInBytes, _bufferedInBytes - message.Payload.Length);
        if (_spilledInCount > 0 && IsFeedLow())
        {
            // Room for the feed loop.
            SignalFeed();
        }
    }

    /// <summary>
    /// Whether the buffered IN bytes fell to the low-water mark (half the budget), below which the feed loop reads the next
    /// spilled messages back: it reads in chunks of up to half the budget, not a message at a time as each is consumed.
    /// Under the gate.
    /// </summary>
    private bool IsFeedLow() => _bufferedInBytes <= _options.MaxBufferedInBytes / 2;

    /// <summary>Wakes the feed loop when a processor may be handed spilled messages.</summary>
    private void SignalFeed()
    {
        if (Volatile.Read(ref _spilledInCount) > 0 && Volatile.Read(ref _processor) is not null)
        {
            _feedSignal.Writer.TryWrite(true);
        }
    }

    /// <summary>Hands the processor spilled messages as room, commits and registrations allow; ends with the DARQ.</summary>
    private async Task RunFeedLoopAsync()
    {
        var token = _stopping.Token;
        var chunk = new List<(long Lsn, int Length, long Sequence)>();
        var failures = (Lsn: -1L, Count: 0);
        var errorDelay = TimeSpan.Zero;
        try
        {
            while (await _feedSignal.Reader.WaitToReadAsync(token).ConfigureAwait(false))
            {
                _feedSignal.Reader.TryRead(out _);
                try
                {
                    while (await FeedOnceAsync(chunk, token).ConfigureAwait(false))
                    {
                    }

                    errorDelay = TimeSpan.Zero;
                }
                catch (FeedException e) when (e.InnerException is InvalidDataException || (e.Lsn == failures.Lsn && failures.Count + 1 >= MaxFeedReadFailures))
                {
                    // A spilled entry that does not read back as the IN message it was (or cannot be read at all, again
                    // and again): the stream of the processor it was read for ends with the error (nothing is consumed or
                    // changed; the log stays as it is for inspection or recovery), and the loop stops feeding that
                    // processor. A new registration tries again.
                    var error = e.InnerException!;
                    DarqLog.FeedFailed(_logger, error, Name);
                    _feedFailed = e.Processor;
                    e.Processor.Fail(error);
                    failures = (-1, 0);
                }
                catch (Exception e) when (e is not OperationCanceledException && e is not ObjectDisposedException && e is not StorageFencedException)
                {
                    // A read that failed (storage), or a commit the loop asked for: tried again after a backoff.
                    if (e is FeedException feed)
                    {
                        failures = feed.Lsn == failures.Lsn ? (feed.Lsn, failures.Count + 1) : (feed.Lsn, 1);
                    }

                    DarqLog.FeedRetry(_logger, (e as FeedException)?.InnerException ?? e, Name);
                    errorDelay = NextRetryDelay(errorDelay);
                    await Task.Delay(errorDelay, _options.TimeProvider, token).ConfigureAwait(false);
                    _feedSignal.Writer.TryWrite(true);
                }
            }
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            // The DARQ closes.
        }
        catch (ObjectDisposedException) when (Volatile.Read(ref _disposed) != 0)
        {
            // The DARQ closed.
        }
        catch (StorageFencedException e)
        {
            // Another instance owns the storage and its own processor gets the messages: this processor's stream ends
            // with the error instead of waiting for spilled messages that will never come.
            DarqLog.FeedFailed(_logger, e, Name);
            Volatile.Read(ref _processor)?.Fail(e);
        }
    }

    /// <summary>A read of spilled messages for <see cref="Processor"/> failed at <see cref="Lsn"/>; the inner exception says why.</summary>
    private sealed class FeedException(DarqProcessor processor, long lsn, Exception inner) : Exception(inner.Message, inner)
    {
        public DarqProcessor Processor { get; } = processor;

        public long Lsn { get; } = lsn;
    }

    /// <summary>
    /// One pass: takes the oldest spilled, committed messages that fit the budget (at least one when nothing is buffered),
    /// reads them back outside the gate, then buffers each still unconsumed one and hands it to the processor, if it is
    /// still the registered one. Returns whether it handed anything over (another pass may follow at once).
    /// </summary>
    private async ValueTask<bool> FeedOnceAsync(List<(long Lsn, int Length, long Sequence)> chunk, CancellationToken token)
    {
        DarqProcessor processor;
        bool commitFirst = false;
        chunk.Clear();
        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            if (_processor is not { } registered || _spilledInCount == 0 || ReferenceEquals(registered, _feedFailed))
            {
                return false;
            }

            processor = registered;

            // The processor read everything it was handed but holds it unconsumed (waiting for a later message, say): it
            // gets more even beyond the low-water mark, or it would wait for ever. Checked on every wake-up, which each
            // commit is.
            bool drained = processor.Unread == 0;
            if (!IsFeedLow() && !drained)
            {
                // The processor has enough to work on; the loop is woken again at the low-water mark.
                return false;
            }

            long room = drained ? Math.Max(_options.MaxBufferedInBytes / 2, _options.MaxBufferedInBytes - _bufferedInBytes)
                : _options.MaxBufferedInBytes - _bufferedInBytes;

            long committed = _log.CommittedUntilAddress;
            long taken = 0;
            foreach (var (lsn, message) in _unconsumed.From(_feedFrom))
            {
                if (!message.IsSpilled)
                {
                    // SELF (never spilled), or an IN message handed over already: buffered when nothing was spilled
                    // (possibly after this mark was set).
                    continue;
                }

                bool starving = chunk.Count == 0 && (_bufferedInBytes == 0 || drained);
                if (lsn >= committed)
                {
                    // Read back once committed: the commit wakes the loop again. Without a background commit (and outside
                    // general speculation, whose versions commit on their own) nothing else may commit soon, so the
                    // loop commits itself rather than leave a waiting processor without its next message.
                    commitFirst = chunk.Count == 0 && _options.CommitInterval == Timeout.InfiniteTimeSpan && _dse is null;
                    break;
                }

                if (chunk.Count == MaxFeedChunk || (!starving && taken + message.SpilledLength > room))
                {
                    // The rest once the processor consumed enough (the low-water mark wakes the loop).
                    break;
                }

                chunk.Add((lsn, message.SpilledLength, message.Step.Sequence));
                taken += message.SpilledLength;
            }
        }
        finally
        {
            _gate.Release();
        }

        if (chunk.Count == 0)
        {
            if (!commitFirst)
            {
                return false;
            }

            await CommitCoreAsync(token).ConfigureAwait(false);
            return true;
        }

        var payloads = new ReadOnlyMemory<byte>[chunk.Count];
        var (read, error) = await ReadSpilledAsync(chunk, payloads, token).ConfigureAwait(false);
        FeedException? failure = null;
        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            if (!ReferenceEquals(_processor, processor))
            {
                // Superseded meanwhile (a new registration, a rollback): the next pass feeds the new processor, if any.
                return _processor is not null;
            }

            // What was read before a failure is handed over; the next pass starts at the message that failed.
            for (int i = 0; i < read; i++)
            {
                long lsn = chunk[i].Lsn;
                if (!_unconsumed.TryGetValue(lsn, out var message) || !message.IsSpilled)
                {
                    // Consumed meanwhile (a processor may consume an LSN it learned elsewhere).
                    continue;
                }

                var buffered = message with { Payload = payloads[i], SpilledLength = -1 };
                _unconsumed[lsn] = buffered;
                Volatile.Write(ref _spilledInCount, _spilledInCount - 1);
                Volatile.Write(ref _bufferedInBytes, _bufferedInBytes + payloads[i].Length);
                processor.Deliver(new DarqMessage(lsn, DarqMessageKind.In, buffered.Payload, IsReplay: lsn < processor.ReplayEnd));
            }

            if (read > 0)
            {
                // Never back: a message spilled meanwhile may have moved the mark past the chunk.
                _feedFrom = Math.Max(_feedFrom, chunk[read - 1].Lsn + 1);
                DarqInstrumentation.FedFromLog.Add(read, _tag);
            }

            // A failure at a message consumed meanwhile (and maybe truncated away under the scan) is no failure: the next
            // pass goes on without it.
            if (error is not null && _unconsumed.TryGetValue(chunk[read].Lsn, out var failed) && failed.IsSpilled)
            {
                failure = new FeedException(processor, chunk[read].Lsn, error);
            }
        }
        finally
        {
            _gate.Release();
        }

        if (failure is not null)
        {
            throw failure;
        }

        return true;
    }

    /// <summary>
    /// Reads the payloads of spilled IN messages back from the committed log into <paramref name="payloads"/>, in one
    /// sequential scan, checking each. Returns how many were read, and the error that stopped it before the rest: an
    /// <see cref="InvalidDataException"/> when an entry is missing, damaged, or not the IN message of the expected length;
    /// an <see cref="IOException"/> when the storage read failed.
    /// </summary>
    private async ValueTask<(int Read, Exception? Error)> ReadSpilledAsync(List<(long Lsn, int Length, long Sequence)> chunk, ReadOnlyMemory<byte>[] payloads,
        CancellationToken token)
    {
        var (lastLsn, lastLength, _) = chunk[^1];
        long end = lastLsn + DarqEntryFormat.LogFootprint(DarqEntryFormat.HeaderSize + 16 + lastLength);
        int next = 0;
        try
        {
            // A message of the chunk consumed meanwhile may be truncated away: never scan below the begin address.
            using var iterator = _log.Scan(Math.Max(chunk[0].Lsn, _log.BeginAddress), end, name: null, recover: false);
            while (next < chunk.Count)
            {
                byte[] entry;
                int length;
                long address;
                try
                {
                    if (!iterator.GetNext(out entry, out length, out address, out _))
                    {
                        if (await iterator.WaitAsync(token).ConfigureAwait(false))
                        {
                            continue;
                        }

                        throw Corrupt(chunk[next].Lsn, "the spilled IN entry is not in the log (the scan ended before it)");
                    }
                }
                catch (Exception e) when (Volatile.Read(ref _disposed) == 0 && e is FasterException or IndexOutOfRangeException or ArgumentException or OverflowException)
                {
                    // A failed storage read, or a damaged FasterLog record header: retried, and given up after
                    // MaxFeedReadFailures in a row at the same message.
                    throw new IOException($"DARQ '{Name}' could not read spilled IN messages from address {chunk[next].Lsn}: {e.Message}", e);
                }

                if (address < chunk[next].Lsn)
                {
                    continue;
                }

                if (address > chunk[next].Lsn)
                {
                    throw Corrupt(chunk[next].Lsn, $"no entry starts at the spilled IN message's address (the scan went on at {address})");
                }

                var span = entry.AsSpan(0, length);
                string? problem = DarqEntryFormat.TryParse(span, out var kind, out _, out long sequence);
                if (problem is null && kind != DarqEntryKind.In)
                {
                    problem = $"a {kind} entry where a spilled IN message was";
                }
                else if (problem is null && sequence != chunk[next].Sequence)
                {
                    problem = $"entry sequence {sequence} where the spilled IN message had {chunk[next].Sequence}";
                }
                else if (problem is null && length != DarqEntryFormat.HeaderSize + 16 + chunk[next].Length)
                {
                    problem = $"an IN entry of {length} bytes where the spilled message had {chunk[next].Length} payload bytes";
                }

                if (problem is not null)
                {
                    throw Corrupt(address, problem);
                }

                payloads[next++] = entry.AsMemory(DarqEntryFormat.HeaderSize + 16, length - DarqEntryFormat.HeaderSize - 16);
            }
        }
        catch (Exception e) when (e is InvalidDataException or IOException)
        {
            return (next, e);
        }

        return (next, null);
    }
}
