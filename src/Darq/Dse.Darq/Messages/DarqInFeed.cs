using System.Threading.Channels;
using Dse.Storage;

namespace Dse.Darq;

/// <summary>
/// The feed of the IN backlog beyond memory: a loop that reads spilled IN payloads back from the log, oldest first and
/// once committed, as the processor consumes what it was handed, and hands them to the processor in LSN order.
/// </summary>
internal sealed class DarqInFeed
{
    /// <summary>The most spilled messages one pass reads back.</summary>
    private const int MaxChunk = 4096;

    /// <summary>Failed reads in a row of the same spilled message after which the processor's stream ends with the error.</summary>
    public const int MaxReadFailures = 8;

    private readonly DarqCore _core;
    private readonly DarqInbox _inbox;
    private readonly DarqCommitter _committer;

    /// <summary>Whether commits happen without anyone asking (a group commit, or general speculation's versions).</summary>
    private readonly bool _commitsOnItsOwn;

    /// <summary>
    /// Wakes the loop: a spill while a processor is registered, a registration, a commit, a consumed message, a read that
    /// leaves the processor nothing unread.
    /// </summary>
    private readonly Channel<bool> _signal = Channel.CreateBounded<bool>(
        new BoundedChannelOptions(1) { FullMode = BoundedChannelFullMode.DropWrite, SingleReader = true });

    /// <summary>The processor whose stream the loop ended with a damaged spilled entry; it is fed no more.</summary>
    private DarqProcessor? _failed;

    private Task _loop = Task.CompletedTask;

    public DarqInFeed(DarqCore core, DarqInbox inbox, DarqCommitter committer, bool commitsOnItsOwn)
    {
        _core = core;
        _inbox = inbox;
        _committer = committer;
        _commitsOnItsOwn = commitsOnItsOwn;
    }

    /// <summary>The loop, once started; ends when the DARQ closes.</summary>
    public Task Loop => _loop;

    /// <summary>
    /// For tests: awaited after the passes of each wake-up, before the loop waits for the next one (null otherwise), so that a
    /// test can act while the loop is known to be between passes.
    /// </summary>
    internal Func<ValueTask>? AfterPassesForTest { get; set; }

    /// <summary>For tests: whether a wake-up is pending, so that the loop runs another pass before it waits.</summary>
    internal bool WakeUpPendingForTest => _signal.Reader.Count > 0;

    public void Start() => _loop = RunAsync();

    /// <summary>Wakes the loop when a processor may be handed spilled messages.</summary>
    public void Signal()
    {
        if (_inbox.SpilledInCount > 0 && _core.Processor is not null)
        {
            _signal.Writer.TryWrite(true);
        }
    }

    /// <summary>Hands the processor spilled messages as room, commits and registrations allow; ends with the DARQ.</summary>
    private async Task RunAsync()
    {
        var token = _core.Stopping;
        var chunk = new List<(long Lsn, int Length, long Sequence)>();
        var failures = (Lsn: -1L, Count: 0);
        var errorDelay = TimeSpan.Zero;
        try
        {
            while (await _signal.Reader.WaitToReadAsync(token).ConfigureAwait(false))
            {
                _signal.Reader.TryRead(out _);
                try
                {
                    while (await FeedOnceAsync(chunk, token).ConfigureAwait(false))
                    {
                    }

                    errorDelay = TimeSpan.Zero;
                }
                catch (FeedException e) when (e.InnerException is InvalidDataException || (e.Lsn == failures.Lsn && failures.Count + 1 >= MaxReadFailures))
                {
                    // A spilled entry that does not read back as the IN message it was (or cannot be read at all, again
                    // and again): the stream of the processor it was read for ends with the error (nothing is consumed or
                    // changed; the log stays as it is for inspection or recovery), and the loop stops feeding that
                    // processor. A new registration tries again.
                    var error = e.InnerException!;
                    DarqLogMessages.FeedFailed(_core.Logger, error, _core.Name);
                    _failed = e.Processor;
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

                    DarqLogMessages.FeedRetry(_core.Logger, (e as FeedException)?.InnerException ?? e, _core.Name);
                    errorDelay = _core.Options.NextRetryDelay(errorDelay);
                    await Task.Delay(errorDelay, _core.Options.TimeProvider, token).ConfigureAwait(false);
                    _signal.Writer.TryWrite(true);
                }

                if (AfterPassesForTest is { } afterPasses)
                {
                    await afterPasses().ConfigureAwait(false);
                }
            }
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            // The DARQ closes.
        }
        catch (ObjectDisposedException) when (_core.IsClosed)
        {
            // The DARQ closed.
        }
        catch (StorageFencedException e)
        {
            // Another instance owns the storage and its own processor gets the messages: this processor's stream ends
            // with the error instead of waiting for spilled messages that will never come.
            DarqLogMessages.FeedFailed(_core.Logger, e, _core.Name);
            _core.Processor?.Fail(e);
        }
    }

    /// <summary>
    /// One pass: takes the oldest spilled, committed messages that fit the budget (at least one when nothing is buffered),
    /// reads them back outside the gate, then buffers each still unconsumed one and hands it to the processor, if it is
    /// still the registered one. Returns whether it handed anything over (another pass may follow at once).
    /// </summary>
    private async ValueTask<bool> FeedOnceAsync(List<(long Lsn, int Length, long Sequence)> chunk, CancellationToken token)
    {
        var options = _core.Options;
        DarqProcessor processor;
        bool commitFirst = false;
        chunk.Clear();
        await _core.Gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            if (_core.Processor is not { } registered || _inbox.SpilledInCount == 0 || ReferenceEquals(registered, _failed))
            {
                return false;
            }

            processor = registered;

            // The processor read everything it was handed but holds it unconsumed (waiting for a later message, say): it
            // gets more even beyond the low-water mark, or it would wait for ever. Checked on every wake-up: each commit is
            // one, and so is the read that takes the last message handed over, so a pass that finds a message unread is
            // followed by one after its read. Messages held for their commit (speculation off) are not read yet: the commit
            // that releases them wakes this loop after releasing them.
            bool drained = processor.ReadEverything;
            if (!_inbox.IsFeedLow && !drained)
            {
                // The processor has enough to work on; the loop is woken again at the low-water mark.
                return false;
            }

            long buffered = _inbox.BufferedInBytes;
            long room = drained ? Math.Max(options.MaxBufferedInBytes / 2, options.MaxBufferedInBytes - buffered) : options.MaxBufferedInBytes - buffered;
            long committed = _core.Log.CommittedUntilAddress;
            long taken = 0;
            foreach (var (lsn, message) in _inbox.Messages.From(_inbox.FeedFrom))
            {
                if (!message.IsSpilled)
                {
                    // SELF (never spilled), or an IN message handed over already: buffered when nothing was spilled
                    // (possibly after this mark was set).
                    continue;
                }

                bool starving = chunk.Count == 0 && (buffered == 0 || drained);
                if (lsn >= committed)
                {
                    // Read back once committed: the commit wakes the loop again. When nothing else commits soon (no
                    // background commit, no versions committing), the loop commits itself rather than leave a waiting
                    // processor without its next message.
                    commitFirst = chunk.Count == 0 && !_commitsOnItsOwn;
                    break;
                }

                if (chunk.Count == MaxChunk || (!starving && taken + message.SpilledLength > room))
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
            _core.Gate.Release();
        }

        if (chunk.Count == 0)
        {
            if (!commitFirst)
            {
                return false;
            }

            await _committer.CommitAsync(token).ConfigureAwait(false);
            return true;
        }

        var payloads = new ReadOnlyMemory<byte>[chunk.Count];
        var (read, error) = await ReadSpilledAsync(chunk, payloads, token).ConfigureAwait(false);
        FeedException? failure = null;
        await _core.Gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            if (!ReferenceEquals(_core.Processor, processor))
            {
                // Superseded meanwhile (a new registration, a rollback): the next pass feeds the new processor, if any.
                return _core.Processor is not null;
            }

            // What was read before a failure is handed over; the next pass starts at the message that failed.
            for (int i = 0; i < read; i++)
            {
                long lsn = chunk[i].Lsn;
                if (!_inbox.TryGet(lsn, out var message) || !message.IsSpilled)
                {
                    // Consumed meanwhile (a processor may consume an LSN it learned elsewhere).
                    continue;
                }

                var buffered = _inbox.Buffer(lsn, message, payloads[i]);
                processor.Deliver(new DarqMessage(lsn, DarqMessageKind.In, buffered.Payload, IsReplay: lsn < processor.ReplayEnd));
            }

            if (read > 0)
            {
                // Never back: a message spilled meanwhile may have moved the mark past the chunk.
                _inbox.AdvanceFeedFrom(chunk[read - 1].Lsn + 1);
                DarqInstrumentation.FedFromLog.Add(read, _core.Tag);
            }

            // A failure at a message consumed meanwhile (and maybe truncated away under the scan) is no failure: the next
            // pass goes on without it.
            if (error is not null && _inbox.TryGet(chunk[read].Lsn, out var failed) && failed.IsSpilled)
            {
                failure = new FeedException(processor, chunk[read].Lsn, error);
            }
        }
        finally
        {
            _core.Gate.Release();
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
            await foreach (var read in FasterLogs.ScanAsync(_core.Log, Math.Max(chunk[0].Lsn, _core.Log.BeginAddress), end, token).ConfigureAwait(false))
            {
                long address = read.Address;
                if (address < chunk[next].Lsn)
                {
                    continue;
                }

                if (address > chunk[next].Lsn)
                {
                    throw _core.Corrupt(chunk[next].Lsn, $"no entry starts at the spilled IN message's address (the scan went on at {address})");
                }

                var span = read.Span;
                string? problem = DarqEntryFormat.TryParse(span, out var kind, out _, out long sequence);
                if (problem is null && kind != DarqEntryKind.In)
                {
                    problem = $"a {kind} entry where a spilled IN message was";
                }
                else if (problem is null && sequence != chunk[next].Sequence)
                {
                    problem = $"entry sequence {sequence} where the spilled IN message had {chunk[next].Sequence}";
                }
                else if (problem is null && read.Length != DarqEntryFormat.HeaderSize + 16 + chunk[next].Length)
                {
                    problem = $"an IN entry of {read.Length} bytes where the spilled message had {chunk[next].Length} payload bytes";
                }

                if (problem is not null)
                {
                    throw _core.Corrupt(address, problem);
                }

                payloads[next++] = read.Buffer.AsMemory(DarqEntryFormat.HeaderSize + 16, read.Length - DarqEntryFormat.HeaderSize - 16);
                if (next == chunk.Count)
                {
                    break;
                }
            }

            if (next < chunk.Count)
            {
                throw _core.Corrupt(chunk[next].Lsn, "the spilled IN entry is not in the log (the scan ended before it)");
            }
        }
        catch (FasterLogReadException e) when (!_core.IsClosed)
        {
            // A failed storage read, or a damaged FasterLog record header: retried, and given up after MaxReadFailures in
            // a row at the same message.
            return (next, new IOException($"DARQ '{_core.Name}' could not read spilled IN messages from address {chunk[next].Lsn}: {e.InnerException?.Message}", e));
        }
        catch (Exception e) when (e is InvalidDataException || (e is IOException && e is not FasterLogReadException))
        {
            return (next, e);
        }

        return (next, null);
    }

    /// <summary>A read of spilled messages for <see cref="Processor"/> failed at <see cref="Lsn"/>; the inner exception says why.</summary>
#pragma warning disable CA1032, CA1064 // Never leaves the feed: its loop catches it.
    private sealed class FeedException(DarqProcessor processor, long lsn, Exception inner) : Exception(inner.Message, inner)
#pragma warning restore CA1032, CA1064
    {
        public DarqProcessor Processor { get; } = processor;

        public long Lsn { get; } = lsn;
    }
}
