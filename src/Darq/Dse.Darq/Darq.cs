using System.Diagnostics;
using Dse.Storage;
using FASTER.core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Darq;

/// <summary>
/// A DARQ: one FasterLog multiplexing IN, SELF, OUT, completion and registration entries, with producers (optionally
/// deduplicated), one co-located processor at a time (identified by a persisted incarnation), serially validated atomic
/// steps, group commit, recovery from the last commit and truncation of the completed prefix.
/// </summary>
/// <remarks>
/// <para>Every mutation runs under one asynchronous gate, so enqueues and steps are validated serially and the commit
/// cookie (incarnation, deduplication table, sequence bounds) always describes exactly the log tail it is committed
/// with. The on-device format is in docs/darq-format.md.</para>
/// <para>Intra-participant speculation: the processor sees IN messages as soon as they are appended, before they are
/// committed. After a DARQ crash its processor must re-register (and so rebuild its state from the replay).</para>
/// </remarks>
public sealed partial class Darq : IAsyncDisposable
{
    private readonly DarqOptions _options;
    private readonly ILogger _logger;
    private readonly FasterLog _log;
    private readonly DarqCommitManager _commitManager;
    private readonly KeyValuePair<string, object?> _tag;

    /// <summary>How long <see cref="DisposeAsync"/> waits for its final commit before closing anyway.</summary>
    private static readonly TimeSpan FinalCommitTimeout = TimeSpan.FromSeconds(30);

    /// <summary>
    /// How long <see cref="DisposeAsync"/> waits for each background loop (commit, delivery, feed) to stop once cancelled:
    /// a loop stuck in a storage read that never returns must not keep the DARQ from closing.
    /// </summary>
    private static readonly TimeSpan LoopStopTimeout = TimeSpan.FromSeconds(30);

    /// <summary>How long <see cref="DisposeAsync"/> waits for the log and its devices to close.</summary>
    private static readonly TimeSpan StorageCloseTimeout = TimeSpan.FromSeconds(30);

    /// <summary>Serializes every mutation and commit request; everything below is guarded by it.</summary>
    private readonly DarqGate _gate = new();

    private readonly Dictionary<long, long> _producers = [];

    /// <summary>Unconsumed IN and SELF messages by LSN (all at or after the begin address).</summary>
    private readonly LsnOrderedMap<PendingMessage> _unconsumed = new();

    /// <summary>OUT entries not yet acknowledged by their destinations, by LSN (all at or after the begin address).</summary>
    private readonly LsnOrderedMap<PendingOut> _pendingOut = new();

    /// <summary>Consumed LSNs at or after the begin address, to tell "already consumed" from "unknown".</summary>
    private readonly ConsumedLsns _consumed = new();

    /// <summary>The entries of the step being appended, reused from step to step; used only under the gate.</summary>
    private readonly StepEntries _stepEntries = new();

    private readonly CancellationTokenSource _stopping = new();
    private Task _commitLoop = Task.CompletedTask;

    private long _incarnation;
    private long _nextSequence;
    private long _beginSequence;
    private long _lastCommitTail;
    private long _lastCommitBegin;
    private int _unconsumedCount;

    /// <summary>
    /// The unconsumed plain SELF messages (activities excluded) in <see cref="_unconsumed"/> and the sum of their payload
    /// lengths: kept by <see cref="AddUnconsumed"/>, <see cref="RemoveUnconsumed"/> and <see cref="ClearUnconsumed"/>
    /// (the only writers of <see cref="_unconsumed"/>), under the gate; read without it.
    /// </summary>
    private int _unconsumedSelfCount;

    private long _unconsumedSelfBytes;
    private DarqProcessor? _processor;
    private int _disposed;

    private Darq(DarqOptions options, FasterLog log, DarqCommitManager commitManager, ILogger logger)
    {
        _options = options;
        _log = log;
        _commitManager = commitManager;
        _logger = logger;
        _tag = new KeyValuePair<string, object?>("darq", options.Name);
    }

    /// <summary>The DARQ's name.</summary>
    public string Name => _options.Name;

    /// <summary>The current processor incarnation (0 before the first registration).</summary>
    public long Incarnation => Interlocked.Read(ref _incarnation);

    /// <summary>The first address still in the log (everything before it is completed and truncated).</summary>
    public long BeginAddress => _log.BeginAddress;

    /// <summary>The address the next entry goes to.</summary>
    public long TailAddress => _log.TailAddress;

    /// <summary>The address up to which the log is durable.</summary>
    public long CommittedUntilAddress => _log.CommittedUntilAddress;

    /// <summary>The number of IN and SELF messages not yet consumed.</summary>
    public int UnconsumedCount => Volatile.Read(ref _unconsumedCount);

    /// <summary>
    /// The number of unconsumed plain SELF messages (activities excluded): what a checkpoint would hand its snapshot
    /// function. Kept up to date by steps, checkpoints, recovery and rollbacks; O(1) to read.
    /// </summary>
    public int UnconsumedSelfCount => Volatile.Read(ref _unconsumedSelfCount);

    /// <summary>The sum of the payload lengths of the unconsumed plain SELF messages, in bytes (see <see cref="UnconsumedSelfCount"/>).</summary>
    public long UnconsumedSelfBytes => Volatile.Read(ref _unconsumedSelfBytes);

    /// <summary>The largest payload of one message, in bytes (<see cref="DarqOptions.MaxMessageSize"/>).</summary>
    public int MaxMessageSize => _options.MaxMessageSize;

    /// <summary>Opens a DARQ on its devices, recovering the state of the last valid commit.</summary>
    /// <param name="options">Devices and settings.</param>
    /// <param name="loggerFactory">Creates the DARQ's logger; <see langword="null"/> for none.</param>
    /// <param name="cancellationToken">Cancels recovery.</param>
    /// <exception cref="InvalidDataException">A committed entry or the commit's state is corrupt; the message names the address.</exception>
    /// <exception cref="InvalidOperationException">
    /// The DARQ was created with a <see cref="DarqOptions.MaxProducers"/> that sizes the commit slots differently; nothing
    /// was written, and the message names the values that fit.
    /// </exception>
    public static async Task<Darq> OpenAsync(DarqOptions options, ILoggerFactory? loggerFactory = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        var logger = loggerFactory?.CreateLogger<Darq>() ?? (ILogger)NullLogger.Instance;

        // FasterLog's recovery info (addresses, commit number, iterators) plus the cookie, with room to spare. The slots
        // are sized the same in every speculation mode (a log may be reopened in another mode, and the second slot's
        // offset follows from the size); revision-3 DARQs sized them without the speculation room outside general mode.
        int legacyMetadata = LegacyCommitMetadataCapacity(options.MaxProducers);
        int maxMetadata = CommitMetadataCapacity(options.MaxProducers);
        DarqCommitManager commitManager;
        StorageFence[] fences = [];
        try
        {
            // Before anything is read: an instance still writing must be fenced before recovery sees the storage.
            fences = await AcquireFencesAsync(options, loggerFactory, cancellationToken).ConfigureAwait(false);
            commitManager = await DarqCommitManager.OpenAsync(options.CommitDevice!, maxMetadata, legacyMetadata, options.OwnsDevices, logger, options.Name)
                .ConfigureAwait(false);
        }
        catch (Exception e)
        {
            if (options.OwnsDevices)
            {
                DisposeDevices(options.CommitDevice!, options.LogDevice!);
            }

            await ReleaseFencesAsync(fences).ConfigureAwait(false);
            if (e is DarqCommitSlotSizeMismatchException mismatch)
            {
                throw SlotSizeMismatch(options, mismatch);
            }

            throw;
        }

        FasterLog? log = null;
        try
        {
            var settings = new FasterLogSettings
            {
                LogDevice = options.LogDevice,
                PageSize = options.PageSize,
                MemorySize = options.MemorySize,
                SegmentSize = options.SegmentSize,
                LogCommitManager = commitManager,
                LogChecksum = LogChecksumType.None,
                TryRecoverLatest = false,
                AutoRefreshSafeTailAddress = false,
                AutoCommit = false,
            };
            log = new FasterLog(settings, (ILogger?)null);
            var darq = new Darq(options, log, commitManager, logger) { _fences = fences, _losableFences = [.. fences.Where(fence => fence.CanBeLost)] };
            await darq.RecoverAsync(cancellationToken).ConfigureAwait(false);
            if (options.Speculation == DarqSpeculationMode.General)
            {
                await darq.ConnectSpeculationAsync(cancellationToken).ConfigureAwait(false);
            }

            if (options.CommitInterval != Timeout.InfiniteTimeSpan)
            {
                darq._commitLoop = darq.RunCommitLoopAsync();
            }

            darq._feedLoop = darq.RunFeedLoopAsync();
            if (options.Destinations is { } destinations)
            {
                // The first pass sends what recovery found committed and pending.
                darq.SignalDelivery();
                darq._deliveryLoop = darq.RunDeliveryLoopAsync(destinations);
            }

            return darq;
        }
        catch
        {
            commitManager.Close();
            try
            {
                log?.Dispose();
            }
            finally
            {
                // Disposes the commit device when owned.
                commitManager.Dispose();
                if (options.OwnsDevices)
                {
                    options.LogDevice!.Dispose();
                }

                await ReleaseFencesAsync(fences).ConfigureAwait(false);
            }

            throw;
        }
    }

    /// <summary>
    /// The commit metadata capacity for a producer limit: the largest cookie plus 4 KiB for FasterLog's own fields plus the
    /// speculation room, the same in every speculation mode (a log may be reopened in another mode, and the second slot's
    /// offset follows from the size).
    /// </summary>
    private static int CommitMetadataCapacity(int maxProducers) => LegacyCommitMetadataCapacity(maxProducers) + DarqCommitState.SpeculationRoom;

    /// <summary>The capacity revision-3 DARQs sized the commit slots with outside general speculation: no speculation room.</summary>
    private static int LegacyCommitMetadataCapacity(int maxProducers) => DarqCommitState.MaxSize(maxProducers) + 4096;

    /// <summary>
    /// The refusal of an open whose <see cref="DarqOptions.MaxProducers"/> sizes the commit slots otherwise than the records
    /// on the commit device state, naming the MaxProducers values that give the recorded size.
    /// </summary>
    private static InvalidOperationException SlotSizeMismatch(DarqOptions options, DarqCommitSlotSizeMismatchException mismatch)
    {
        // Slots are whole 4 KiB blocks, so a range of MaxProducers values shares one size; sizes grow with MaxProducers.
        long recorded = mismatch.RecordedSlotSize;
        int lowest = FirstMaxProducersWithSlotsOf(recorded);
        int highest = FirstMaxProducersWithSlotsOf(recorded + 1) - 1;
        string created = lowest > highest
            ? $"which no MaxProducers between 1 and {DarqOptions.MaxProducersLimit} gives (not a commit device of this DARQ revision?)"
            : lowest == highest ? $"which MaxProducers {lowest} gives" : $"which MaxProducers {lowest} to {highest} give";
        return new InvalidOperationException(
            $"DARQ '{options.Name}' was created with another DarqOptions.MaxProducers: its commit records were written with {recorded}-byte " +
            $"commit slots, {created}, but this open has MaxProducers {options.MaxProducers}, which gives {mismatch.SlotSize}-byte slots " +
            "(the second slot's offset follows from the size). Reopen it with the MaxProducers it was created with; nothing was changed on its devices.",
            mismatch);

        // The smallest MaxProducers whose slots are at least this large (MaxProducersLimit + 1 when none).
        static int FirstMaxProducersWithSlotsOf(long slotSize)
        {
            int low = 1;
            int high = DarqOptions.MaxProducersLimit + 1;
            while (low < high)
            {
                int middle = low + ((high - low) / 2);
                if (DarqCommitManager.SlotSizeFor(CommitMetadataCapacity(middle)) >= slotSize)
                {
                    high = middle;
                }
                else
                {
                    low = middle + 1;
                }
            }

            return low;
        }
    }

    /// <summary>Disposes devices one after the other, each even when an earlier one throws.</summary>
    private static void DisposeDevices(IDevice first, IDevice second)
    {
        try
        {
            first.Dispose();
        }
        finally
        {
            second.Dispose();
        }
    }

    /// <summary>Appends an IN message without deduplication.</summary>
    /// <param name="payload">The payload (copied), at most <see cref="MaxMessageSize"/> bytes.</param>
    /// <param name="cancellationToken">Cancels waiting for the gate or for log memory; nothing is appended then.</param>
    /// <returns>The message's LSN and the address to await for durability.</returns>
    /// <exception cref="ArgumentException">The payload is larger than <see cref="MaxMessageSize"/>.</exception>
    public ValueTask<DarqEnqueueResult> EnqueueAsync(ReadOnlyMemory<byte> payload, CancellationToken cancellationToken = default)
    {
        CheckPayload(payload.Length, nameof(payload));
        return _dse is null
            ? EnqueueCoreAsync(payload, 0, 0, dedup: false, contiguous: false, cancellationToken)
            : EnqueueInActionAsync(payload, 0, 0, dedup: false, contiguous: false, cancellationToken);
    }

    /// <summary>
    /// Appends an IN message from a producer, deduplicated by (producer id, sequence number): a sequence number not above
    /// the largest seen from that producer is acknowledged as a duplicate and not appended. With
    /// <see cref="DarqOptions.ContiguousProducerSequences"/> a number more than one above it is refused.
    /// </summary>
    /// <param name="producerId">The producer's globally unique id.</param>
    /// <param name="sequenceNumber">The message's sequence number from that producer, nonnegative and increasing.</param>
    /// <param name="payload">The payload (copied), at most <see cref="MaxMessageSize"/> bytes.</param>
    /// <param name="cancellationToken">Cancels waiting for the gate or for log memory; nothing is appended then.</param>
    /// <returns>The new message's LSN, or a duplicate acknowledgement; and the address to await for durability.</returns>
    /// <exception cref="ArgumentException">The payload is too large or the sequence number negative.</exception>
    /// <exception cref="InvalidOperationException">The producer is new and the table already holds <see cref="DarqOptions.MaxProducers"/> producers.</exception>
    /// <exception cref="DarqSequenceGapException">
    /// <see cref="DarqOptions.ContiguousProducerSequences"/> is on and the number skips some: the exception names the one expected.
    /// </exception>
    public ValueTask<DarqEnqueueResult> EnqueueAsync(long producerId, long sequenceNumber, ReadOnlyMemory<byte> payload,
        CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(sequenceNumber);
        CheckPayload(payload.Length, nameof(payload));
        bool contiguous = _options.ContiguousProducerSequences;
        return _dse is null
            ? EnqueueCoreAsync(payload, producerId, sequenceNumber, dedup: true, contiguous, cancellationToken)
            : EnqueueInActionAsync(payload, producerId, sequenceNumber, dedup: true, contiguous, cancellationToken);
    }

    /// <summary>Commits the log up to its current tail, with the DARQ state, and waits until that commit is durable.</summary>
    /// <param name="cancellationToken">Cancels waiting; the commit itself still happens.</param>
    /// <exception cref="IOException">Commit-record writes to the commit device keep failing; the commit is retried in the background.</exception>
    public async ValueTask CommitAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfDisposed();
        await CommitCoreAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Waits until the log is durable up to <paramref name="address"/> (from an enqueue or step result).</summary>
    /// <param name="address">The address to wait for.</param>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <remarks>This issues no commit: the group commit (or <see cref="CommitAsync"/>) does.</remarks>
    /// <exception cref="IOException">Commit-record writes to the commit device keep failing; commits are retried in the background.</exception>
    public ValueTask WaitForCommitAsync(long address, CancellationToken cancellationToken = default)
    {
        if (_log.CommittedUntilAddress >= address)
        {
            return ValueTask.CompletedTask;
        }

        return UntilCommitFailureAsync(_log.WaitForCommitAsync(address, -1, cancellationToken));
    }

    /// <summary>
    /// Truncates the completed prefix of the log (everything before the step holding the oldest unconsumed IN or SELF
    /// message or unacknowledged OUT message; steps are kept whole) and commits, so that the truncation is durable.
    /// Unlike the commit loop's truncation (<see cref="DarqOptions.AutoTruncate"/>), it also cuts what log memory still
    /// holds.
    /// </summary>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <returns>The new begin address.</returns>
    public async ValueTask<long> TruncateAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfDisposed();
        long begin = await TruncateCoreAsync(background: false, cancellationToken).ConfigureAwait(false);
        await CommitCoreAsync(cancellationToken).ConfigureAwait(false);
        return begin;
    }

    /// <summary>Stops the background commit, commits what was appended, and closes the log (and the devices when owned).</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        await _stopping.CancelAsync().ConfigureAwait(false);
        if (_dse is not null)
        {
            // First: no version advance or rollback may run once the log closes.
            await _dse.DisposeAsync().ConfigureAwait(false);
        }

        foreach (var (loop, name) in new[] { (_commitLoop, "commit"), (_deliveryLoop, "delivery"), (_feedLoop, "feed") })
        {
            try
            {
                await loop.WaitAsync(LoopStopTimeout, _options.TimeProvider).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                // The loops end by cancellation.
            }
            catch (TimeoutException)
            {
                // Closed regardless: FasterLog keeps the log's memory until the loop's iterator or read lets go of it, and
                // whatever the loop does next fails on the closed DARQ (its processor's stream is closed below).
                DarqLog.LoopDidNotStop(_logger, Name, name, LoopStopTimeout);
            }
        }

        try
        {
            // Bounded: a commit device that stopped answering must not keep the DARQ from closing.
            await CommitCoreAsync(CancellationToken.None).AsTask().WaitAsync(FinalCommitTimeout, _options.TimeProvider).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or CommitFailureException or InvalidOperationException or TimeoutException)
        {
            DarqLog.CommitFailed(_logger, e, Name);
        }

        bool storageClosed = true;
        await _gate.WaitAsync().ConfigureAwait(false);
        try
        {
            _processor?.Close();
            _processor = null;
            PulseDeliveryProgress();

            // Stop retrying commit-record writes first, so FasterLog's commit worker is free when the log is disposed.
            _commitManager.Close();

            // Off this thread, and bounded: FasterLog and FASTER's devices close synchronously and wait for every I/O
            // they issued, and one that never returns kept DisposeAsync from returning (seen once, a local-file device
            // waiting for a file handle after the final commit failed).
            var closing = Task.Run(CloseStorage);
            try
            {
                await closing.WaitAsync(StorageCloseTimeout, _options.TimeProvider).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                storageClosed = false;
                DarqLog.StorageDidNotClose(_logger, Name, StorageCloseTimeout);
            }
        }
        finally
        {
            _gate.Release();
        }

        // Last: nothing of this instance writes any more. Storage that did not close may still be written to, so its
        // locks stay taken (a new instance on the same files is refused) until the process ends.
        if (storageClosed)
        {
            await ReleaseFencesAsync(_fences).ConfigureAwait(false);
        }

        _stopping.Dispose();
    }

    /// <summary>Disposes the log, the commit manager (and the commit device when owned) and the log device when owned.</summary>
    private void CloseStorage()
    {
        try
        {
            _log.Dispose();
        }
        finally
        {
            _commitManager.Dispose();
            if (_options.OwnsDevices)
            {
                _options.LogDevice!.Dispose();
            }
        }
    }

    private void CheckPayload(int length, string parameter)
    {
        if (length > _options.MaxMessageSize)
        {
            throw new ArgumentException(
                $"The message has {length} bytes; DARQ '{Name}' accepts at most {_options.MaxMessageSize} (DarqOptions.MaxMessageSize).", parameter);
        }
    }

    private void ThrowIfDisposed()
    {
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        ThrowIfFenced();
    }

    /// <summary>
    /// Checks and appends an IN entry. <paramref name="contiguous"/>: whether a sequence number more than one above the
    /// producer's is refused (producers' enqueues with <see cref="DarqOptions.ContiguousProducerSequences"/>, never deliveries).
    /// </summary>
    private ValueTask<DarqEnqueueResult> EnqueueCoreAsync(ReadOnlyMemory<byte> payload, long producerId, long sequenceNumber, bool dedup, bool contiguous,
        CancellationToken cancellationToken)
    {
        // Built before taking the gate: only the sequence number and the checksum wait for it.
        var entry = DarqEntryFormat.InUnsealed(payload.Span, producerId, sequenceNumber, dedup);

        // Fast path: the gate is free and the log has room, so the enqueue completes synchronously.
        if (cancellationToken.IsCancellationRequested || !_gate.Wait(0))
        {
            return EnqueueSlowAsync(entry, producerId, sequenceNumber, dedup, contiguous, cancellationToken);
        }

        bool release = true;
        try
        {
            if (IsDuplicate(producerId, sequenceNumber, dedup, contiguous, out var duplicate))
            {
                return ValueTask.FromResult(duplicate);
            }

            DarqEntryFormat.SealIn(entry, _nextSequence, dedup);
            if (_log.TryEnqueue(entry, out long lsn))
            {
                return ValueTask.FromResult(ApplyEnqueue(entry, lsn, producerId, sequenceNumber, dedup));
            }

            // The in-memory log is full: the slow path appends the sealed entry and releases the gate.
            release = false;
            return AppendEnqueueAsync(entry, producerId, sequenceNumber, dedup, cancellationToken);
        }
#pragma warning disable CA1031 // Not swallowed: a refused enqueue faults the returned task, as the slow path's would.
        catch (Exception e)
#pragma warning restore CA1031
        {
            return ValueTask.FromException<DarqEnqueueResult>(e);
        }
        finally
        {
            if (release)
            {
                _gate.Release();
            }
        }
    }

    /// <summary>An enqueue that found the gate taken: waits for it, then checks and appends.</summary>
    private async ValueTask<DarqEnqueueResult> EnqueueSlowAsync(byte[] entry, long producerId, long sequenceNumber, bool dedup, bool contiguous,
        CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (IsDuplicate(producerId, sequenceNumber, dedup, contiguous, out var duplicate))
            {
                return duplicate;
            }

            DarqEntryFormat.SealIn(entry, _nextSequence, dedup);
            long lsn = await AppendAsync(entry, cancellationToken).ConfigureAwait(false);
            return ApplyEnqueue(entry, lsn, producerId, sequenceNumber, dedup);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Appends a sealed IN entry once log memory frees up; owns the gate, which the caller took, and releases it.</summary>
    private async ValueTask<DarqEnqueueResult> AppendEnqueueAsync(byte[] entry, long producerId, long sequenceNumber, bool dedup,
        CancellationToken cancellationToken)
    {
        try
        {
            long lsn = await _log.EnqueueAsync(entry, cancellationToken).ConfigureAwait(false);
            return ApplyEnqueue(entry, lsn, producerId, sequenceNumber, dedup);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>
    /// Under the gate: whether a deduplicated enqueue is a duplicate (then <paramref name="result"/> acknowledges it);
    /// throws when the producer would be one too many, or (<paramref name="contiguous"/>) when the number skips some.
    /// </summary>
    private bool IsDuplicate(long producerId, long sequenceNumber, bool dedup, bool contiguous, out DarqEnqueueResult result)
    {
        ThrowIfDisposed();
        result = default;
        if (!dedup)
        {
            return false;
        }

        bool known = _producers.TryGetValue(producerId, out long seen);
        if (known && sequenceNumber <= seen)
        {
            NoteProducerSeen(producerId);
            DarqInstrumentation.Duplicates.Add(1, _tag);
            result = new DarqEnqueueResult(-1, IsDuplicate: true, DurableAt: _log.TailAddress);
            return true;
        }

        long expected = known ? seen + 1 : 0;
        if (contiguous && sequenceNumber != expected)
        {
            DarqInstrumentation.SequenceGaps.Add(1, _tag);
            throw new DarqSequenceGapException(Name, producerId, sequenceNumber, expected);
        }

        if (!known && _producers.Count >= _options.MaxProducers)
        {
            throw new InvalidOperationException(
                $"DARQ '{Name}' already tracks {_producers.Count} producers (DarqOptions.MaxProducers); producer {producerId} is refused. " +
                "Retire producers that will never send again (RetireProducerAsync) to free their slots.");
        }

        if (_dse is not null)
        {
            EnsureUndoRoom(producerId);
        }

        return false;
    }

    /// <summary>Applies an appended IN entry to the in-memory state; under the gate, cannot fail.</summary>
    private DarqEnqueueResult ApplyEnqueue(byte[] entry, long lsn, long producerId, long sequenceNumber, bool dedup)
    {
        var payload = entry.AsMemory(DarqEntryFormat.HeaderSize + 16);
        var start = new StepStart(lsn, _nextSequence);
        NoteStepStart(start);
        var message = MayBufferIn(payload.Length) ? new PendingMessage(DarqMessageKind.In, start, payload) : SpilledIn(start, payload.Length);
        _nextSequence++;
        if (dedup)
        {
            if (_dse is not null)
            {
                NoteProducerChange(producerId, _producers.TryGetValue(producerId, out long seen) ? seen : -1);
            }

            _producers[producerId] = sequenceNumber;
            NoteProducerSeen(producerId);
        }

        AddUnconsumed(lsn, message);
        Volatile.Write(ref _unconsumedCount, _unconsumed.Count);
        if (!message.IsSpilled)
        {
            // Buffered: nothing is spilled, so the processor has every older IN message already.
            _processor?.Deliver(new DarqMessage(lsn, DarqMessageKind.In, message.Payload, IsReplay: false));
        }
        else
        {
            SignalFeed();
        }

        if (DarqInstrumentation.Enqueues.Enabled)
        {
            DarqInstrumentation.Enqueues.Add(1, _tag);
        }
        return new DarqEnqueueResult(lsn, IsDuplicate: false, DurableAt: lsn + DarqEntryFormat.LogFootprint(entry.Length));
    }

    /// <summary>Adds an unconsumed message, counting a plain SELF message; under the gate.</summary>
    private void AddUnconsumed(long lsn, in PendingMessage message)
    {
        _unconsumed.Add(lsn, message);
        if (message.Kind == DarqMessageKind.In)
        {
            CountInAdded(lsn, message);
        }
        else if (message.Kind == DarqMessageKind.Self)
        {
            Volatile.Write(ref _unconsumedSelfCount, _unconsumedSelfCount + 1);
            Volatile.Write(ref _unconsumedSelfBytes, _unconsumedSelfBytes + message.Payload.Length);
        }
    }

    /// <summary>Removes an unconsumed message (consumed or replaced), uncounting a plain SELF message; under the gate.</summary>
    /// <returns>Whether the message was unconsumed.</returns>
    private bool RemoveUnconsumed(long lsn)
    {
        if (!_unconsumed.Remove(lsn, out var message))
        {
            return false;
        }

        if (message.Kind == DarqMessageKind.In)
        {
            CountInRemoved(message);
        }
        else if (message.Kind == DarqMessageKind.Self)
        {
            Volatile.Write(ref _unconsumedSelfCount, _unconsumedSelfCount - 1);
            Volatile.Write(ref _unconsumedSelfBytes, _unconsumedSelfBytes - message.Payload.Length);
        }

        return true;
    }

    /// <summary>Forgets every unconsumed message (before a rebuild); under the gate.</summary>
    private void ClearUnconsumed()
    {
        _unconsumed.Clear();
        Volatile.Write(ref _unconsumedSelfCount, 0);
        Volatile.Write(ref _unconsumedSelfBytes, 0L);
        Volatile.Write(ref _bufferedInBytes, 0L);
        Volatile.Write(ref _spilledInCount, 0);
    }

    /// <summary>The plain SELF counters match <see cref="_unconsumed"/> (an O(n) recount: debug builds, after recovery, rebuild and checkpoint).</summary>
    [Conditional("DEBUG")]
    private void AssertSelfCounters()
    {
        int count = 0;
        long bytes = 0;
        foreach (var message in _unconsumed.Values)
        {
            if (message.Kind == DarqMessageKind.Self)
            {
                count++;
                bytes += message.Payload.Length;
            }
        }

        Debug.Assert(count == _unconsumedSelfCount && bytes == _unconsumedSelfBytes,
            $"plain SELF counters {_unconsumedSelfCount}/{_unconsumedSelfBytes} bytes, recount {count}/{bytes} bytes");
    }

    /// <summary>Appends one entry; call under the gate. Waits for log memory when the in-memory log is full.</summary>
    private ValueTask<long> AppendAsync(byte[] entry, CancellationToken cancellationToken)
    {
        Debug.Assert(_gate.CurrentCount == 0, "appends run under the gate");
        return _log.TryEnqueue(entry, out long lsn) ? ValueTask.FromResult(lsn) : _log.EnqueueAsync(entry, cancellationToken);
    }

    /// <summary>Appends entries contiguously as one batch; call under the gate. Returns each entry's address.</summary>
    private async ValueTask<long[]> AppendBatchAsync(List<byte[]> entries, CancellationToken cancellationToken)
    {
        Debug.Assert(_gate.CurrentCount == 0, "appends run under the gate");
        var batch = new EntryBatch(entries);
        if (!_log.TryEnqueue(batch, out long first))
        {
            first = await _log.EnqueueAsync(batch, cancellationToken).ConfigureAwait(false);
        }

        // FasterLog reports only the first address of a batch: the others follow at aligned sizes.
        var addresses = new long[entries.Count];
        long address = first;
        for (int i = 0; i < entries.Count; i++)
        {
            addresses[i] = address;
            address += DarqEntryFormat.LogFootprint(entries[i].Length);
        }

        return addresses;
    }

    /// <summary>
    /// Awaits a commit wait, or fails with the commit manager's <see cref="IOException"/> when commit-record writes keep
    /// failing (the commit wait alone would then not end until the device recovers); a failure caused by another instance
    /// taking the storage over is a <see cref="StorageFencedException"/>.
    /// </summary>
    private async ValueTask UntilCommitFailureAsync(ValueTask commitWait)
    {
        try
        {
            if (commitWait.IsCompleted)
            {
                await commitWait.ConfigureAwait(false);
                return;
            }

            var wait = commitWait.AsTask();
            var failure = _commitManager.Failure;
            if (await Task.WhenAny(wait, failure).ConfigureAwait(false) == failure)
            {
                // The abandoned wait may still fault (the log is disposed later); observe it.
                _ = wait.ContinueWith(static t => _ = t.Exception, CancellationToken.None, TaskContinuationOptions.OnlyOnFaulted, TaskScheduler.Default);
                await failure.ConfigureAwait(false);
            }

            await wait.ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or CommitFailureException && e is not StorageFencedException && FencedException() is { } fenced)
        {
            // A log page write refused for fencing surfaces from FasterLog as a plain commit failure: say why.
            throw fenced;
        }
    }

    private async ValueTask CommitCoreAsync(CancellationToken cancellationToken)
    {
        ValueTask<(bool, long, long)> pending;
        long waitFor;
        long started;
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            RetireIdleProducersUnderGate();
            long tail = _log.TailAddress;
            long begin = _log.BeginAddress;
            if (tail == _lastCommitTail && begin == _lastCommitBegin)
            {
                pending = default;
                waitFor = tail;
                started = 0;
            }
            else
            {
                // Under the gate nothing is appended, so the cookie describes exactly the tail FasterLog commits.
                var cookie = SerializeCookie();
                started = Stopwatch.GetTimestamp();
                pending = _log.CommitStronglyAsync(cookie, -1, CancellationToken.None);
                _lastCommitTail = tail;
                _lastCommitBegin = begin;
                waitFor = tail;
            }
        }
        finally
        {
            _gate.Release();
        }

        try
        {
            if (started != 0)
            {
                await UntilCommitFailureAsync(AsValueTask(pending)).ConfigureAwait(false);
                if (DarqInstrumentation.CommitLatency.Enabled)
                {
                    DarqInstrumentation.CommitLatency.Record(Stopwatch.GetElapsedTime(started).TotalMilliseconds, _tag);
                }
            }

            await WaitForCommitAsync(waitFor, cancellationToken).ConfigureAwait(false);
            SignalDelivery();
        }
        catch (Exception e) when (e is IOException or CommitFailureException or InvalidOperationException)
        {
            // The commit may not have happened: the next commit request must issue a commit rather than take the
            // "nothing changed" path and wait for this one.
            await _gate.WaitAsync(CancellationToken.None).ConfigureAwait(false);
            try
            {
                _lastCommitTail = -1;
            }
            finally
            {
                _gate.Release();
            }

            throw;
        }

        static async ValueTask AsValueTask(ValueTask<(bool, long, long)> commit) => await commit.ConfigureAwait(false);
    }

    /// <summary>
    /// The cookie of a new commit; under the gate. Refused before FasterLog sees it when it would not fit the commit
    /// records: FasterLog's commit worker would fail on it, and on every commit after it.
    /// </summary>
    /// <exception cref="InvalidOperationException">The state outgrew the commit records' room.</exception>
    private byte[] SerializeCookie()
    {
        var cookie = CaptureState().Serialize();
        int limit = DarqCommitState.MaxSize(_options.MaxProducers) + DarqCommitState.SpeculationRoom;
        if (cookie.Length > limit)
        {
            throw new InvalidOperationException(
                $"DARQ '{Name}': the commit state takes {cookie.Length} bytes, more than the {limit} its commit records hold: " +
                $"{_versions.Count} versions the coordinator has not committed keep their deduplication undo tables " +
                "(general speculation). Commits resume once the coordinator commits and those versions are pruned.");
        }

        return cookie;
    }

    private DarqCommitState CaptureState() => new()
    {
        General = _options.Speculation == DarqSpeculationMode.General,
        Incarnation = _incarnation,
        NextSequence = _nextSequence,
        BeginSequence = _beginSequence,
        Producers = _producers,
        Voided = _voided,
        Versions = _versions,
    };

    /// <summary>
    /// Truncates the completed prefix; <paramref name="background"/> (the commit loop): only as far as log memory no
    /// longer holds it (see Darq.Truncation.cs).
    /// </summary>
    private async ValueTask<long> TruncateCoreAsync(bool background, CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();

            // The completed prefix ends at the start of the step holding the oldest entry still pending, or at the tail
            // when none is. Recovery checks each completion against all SELF/OUT entries of its step, so a truncation
            // must never cut a step in half: a consumed SELF before a pending OUT of the same step stays in the log.
            // Steps are contiguous, so the oldest pending entry's step starts before every other pending entry's.
            var start = new StepStart(_log.TailAddress, _nextSequence);
            foreach (var message in _unconsumed.Values)
            {
                start = message.Step;
                break;
            }

            foreach (var pending in _pendingOut.Values)
            {
                if (pending.Step.Lsn < start.Lsn)
                {
                    start = pending.Step;
                }

                break;
            }

            start = LimitTruncation(start);
            if (background)
            {
                if (BackgroundTruncationPoint(start) is not { } point)
                {
                    return _log.BeginAddress;
                }

                start = point;
            }

            long until = start.Lsn;
            if (until > _log.BeginAddress)
            {
                _log.TruncateUntil(until);
                _beginSequence = start.Sequence;
                _consumed.ForgetBelow(until);
                ForgetTruncationMarksBelow(until);

                DarqLog.Truncated(_logger, Name, until);
            }

            return _log.BeginAddress;
        }
        finally
        {
            _gate.Release();
        }
    }

    private async Task RunCommitLoopAsync()
    {
        using var timer = new PeriodicTimer(_options.CommitInterval, _options.TimeProvider);
        var token = _stopping.Token;
        while (await timer.WaitForNextTickAsync(token).ConfigureAwait(false))
        {
            try
            {
                if (_options.AutoTruncate)
                {
                    await TruncateCoreAsync(background: true, token).ConfigureAwait(false);
                }

                await CommitCoreAsync(token).ConfigureAwait(false);
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
                // Another instance owns the storage: committing again can never succeed.
                DarqLog.CommitLoopFenced(_logger, e, Name);
                return;
            }
            catch (Exception e) when (e is IOException or CommitFailureException or InvalidOperationException)
            {
                DarqLog.CommitFailed(_logger, e, Name);
            }
#pragma warning disable CA1031 // The loop is the DARQ's only group commit: an unexpected error must not end it silently.
            catch (Exception e)
#pragma warning restore CA1031
            {
                DarqLog.CommitLoopError(_logger, e, Name);
            }
        }
    }

    /// <summary>
    /// An unconsumed IN or SELF message: its kind, the start of the step that appended it (an IN message is a step of
    /// its own) and its payload (none for a spilled IN message, read back from the log when the processor gets to it).
    /// </summary>
    private readonly record struct PendingMessage(DarqMessageKind Kind, StepStart Step, ReadOnlyMemory<byte> Payload, int SpilledLength = -1)
    {
        /// <summary>Whether the payload is in the log only (an IN message beyond <see cref="DarqOptions.MaxBufferedInBytes"/>); <see cref="SpilledLength"/> is its length then.</summary>
        public bool IsSpilled => SpilledLength >= 0;
    }

    /// <summary>Where a step (the unit truncation keeps whole) begins: its first entry's LSN and sequence number.</summary>
    private readonly record struct StepStart(long Lsn, long Sequence);

    /// <summary>A step's entries handed to FasterLog as one batch.</summary>
    private sealed class EntryBatch(List<byte[]> entries) : IReadOnlySpanBatch
    {
        public int TotalEntries() => entries.Count;

        public ReadOnlySpan<byte> Get(int index) => entries[index];
    }

    /// <summary>
    /// The entries (SELF, OUT, completion) of the step, or the batch of steps, being appended, written back to back into
    /// one reusable buffer and handed to FasterLog as batches (which copy them into log memory): no allocation per step
    /// once the buffer has grown to the largest step or batch. A window selects the steps one FasterLog batch takes (a
    /// FasterLog batch must fit on one page, so a large batch of steps is appended as several).
    /// </summary>
    private sealed class StepEntries : IReadOnlySpanBatch
    {
        private byte[] _buffer = new byte[4096];

        /// <summary>Entry i spans <c>_ends[i - 1]</c> (0 for the first) to <c>_ends[i]</c> in the buffer.</summary>
        private int[] _ends = new int[4];

        /// <summary>Where each step ends: its entries, its destinations and the log bytes of its entries.</summary>
        private StepBounds[] _steps = new StepBounds[1];

        /// <summary>The entries FasterLog is handed: <c>_windowCount</c> entries from <c>_windowStart</c>.</summary>
        private int _windowStart;
        private int _windowCount;

        public int Count { get; private set; }

        /// <summary>How many steps the entries hold (each ended by <see cref="EndStep"/>).</summary>
        public int StepCount { get; private set; }

        /// <summary>The destinations of the OUT entries, in order (the same string instances the steps named).</summary>
        public List<string> Destinations { get; } = [];

        public void Clear()
        {
            Count = 0;
            StepCount = 0;
            _windowStart = 0;
            _windowCount = 0;
            Destinations.Clear();
        }

        /// <summary>Adds an entry of <paramref name="length"/> bytes and returns its space, to be written completely.</summary>
        public Span<byte> Add(int length)
        {
            int start = Count == 0 ? 0 : _ends[Count - 1];
            if (start + length > _buffer.Length)
            {
                Array.Resize(ref _buffer, Math.Max(_buffer.Length * 2, start + length));
            }

            if (Count == _ends.Length)
            {
                Array.Resize(ref _ends, _ends.Length * 2);
            }

            _ends[Count++] = start + length;
            return _buffer.AsSpan(start, length);
        }

        /// <summary>Ends the step whose entries were added since the previous one ended, and widens the window to every entry.</summary>
        public void EndStep()
        {
            var previous = StepCount == 0 ? default : _steps[StepCount - 1];
            long footprint = 0;
            for (int i = previous.EntryEnd; i < Count; i++)
            {
                footprint += DarqEntryFormat.LogFootprint(Length(i));
            }

            if (StepCount == _steps.Length)
            {
                Array.Resize(ref _steps, _steps.Length * 2);
            }

            _steps[StepCount++] = new StepBounds(Count, Destinations.Count, previous.Footprint + footprint);
            _windowStart = 0;
            _windowCount = Count;
        }

        /// <summary>Step <paramref name="step"/>'s entries and destinations, as [start, end) ranges.</summary>
        public (int EntryStart, int EntryEnd, int DestinationStart, int DestinationEnd) Step(int step)
        {
            var previous = step == 0 ? default : _steps[step - 1];
            var bounds = _steps[step];
            return (previous.EntryEnd, bounds.EntryEnd, previous.DestinationEnd, bounds.DestinationEnd);
        }

        /// <summary>
        /// The end (exclusive) of the longest run of steps from <paramref name="firstStep"/> whose entries take at most
        /// <paramref name="limit"/> log bytes; at least one step (each step alone fits, as checked before the gate).
        /// </summary>
        public int ChunkEnd(int firstStep, long limit)
        {
            long before = firstStep == 0 ? 0 : _steps[firstStep - 1].Footprint;
            int end = firstStep + 1;
            while (end < StepCount && _steps[end].Footprint - before <= limit)
            {
                end++;
            }

            return end;
        }

        /// <summary>The log bytes step <paramref name="step"/>'s entries take.</summary>
        public long StepFootprint(int step) => _steps[step].Footprint - (step == 0 ? 0 : _steps[step - 1].Footprint);

        /// <summary>Makes FasterLog see only the entries of steps <paramref name="firstStep"/> to <paramref name="endStep"/> (exclusive).</summary>
        public void Window(int firstStep, int endStep)
        {
            _windowStart = firstStep == 0 ? 0 : _steps[firstStep - 1].EntryEnd;
            _windowCount = _steps[endStep - 1].EntryEnd - _windowStart;
        }

        public int Length(int index) => _ends[index] - (index == 0 ? 0 : _ends[index - 1]);

        /// <summary>Entry <paramref name="index"/> of all the entries (not of the window).</summary>
        public ReadOnlySpan<byte> Entry(int index)
        {
            int start = index == 0 ? 0 : _ends[index - 1];
            return _buffer.AsSpan(start, _ends[index] - start);
        }

        int IReadOnlySpanBatch.TotalEntries() => _windowCount;

        ReadOnlySpan<byte> IReadOnlySpanBatch.Get(int index) => Entry(_windowStart + index);

        /// <summary>Where a step ends: its entries and destinations (exclusive), and the log bytes of all steps up to it.</summary>
        private readonly record struct StepBounds(int EntryEnd, int DestinationEnd, long Footprint);
    }
}
