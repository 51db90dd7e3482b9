using System.IO.Hashing;
using System.Text;
using FASTER.core;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Darq;

/// <summary>
/// A DARQ: one FasterLog multiplexing IN, SELF, OUT, completion and registration entries, with producers (optionally
/// deduplicated), one co-located processor at a time (identified by a persisted incarnation), serially validated atomic
/// steps, group commit, recovery from the last commit, truncation of the completed prefix, and delivery of OUT messages
/// to other DARQs.
/// </summary>
/// <remarks>
/// <para>Every mutation runs under one asynchronous gate, so enqueues and steps are validated serially and the commit
/// cookie (incarnation, deduplication table, sequence bounds) always describes exactly the log tail it is committed
/// with. The on-device format is in docs/darq-format.md.</para>
/// <para>This type is the public face; its parts own their state: the producer table, the inbox (unconsumed IN and SELF
/// messages, and the IN backlog beyond memory), the outbox and its delivery, the committer (commits, cookie,
/// truncation), the processor side (registration, steps, checkpoints), and the speculation mode, chosen at open
/// (<see cref="DarqOptions.Speculation"/>), through which every operation goes.</para>
/// <para>Intra-participant speculation: the processor sees IN messages as soon as they are appended, before they are
/// committed. After a DARQ crash its processor must re-register (and so rebuild its state from the replay).</para>
/// </remarks>
public sealed class Darq : IAsyncDisposable
{
    /// <summary>How long <see cref="DisposeAsync"/> waits for its final commit before closing anyway.</summary>
    private static readonly TimeSpan FinalCommitTimeout = TimeSpan.FromSeconds(30);

    /// <summary>
    /// How long <see cref="DisposeAsync"/> waits for each background loop (commit, delivery, feed) to stop once cancelled:
    /// a loop stuck in a storage read that never returns must not keep the DARQ from closing.
    /// </summary>
    private static readonly TimeSpan LoopStopTimeout = TimeSpan.FromSeconds(30);

    /// <summary>How long <see cref="DisposeAsync"/> waits for the log and its devices to close.</summary>
    private static readonly TimeSpan StorageCloseTimeout = TimeSpan.FromSeconds(30);

    private readonly DarqCore _core;
    private readonly DarqParts _parts;
    private readonly DarqSpeculation _speculation;
    private readonly DarqParkedDestinations _parked;
    private readonly DarqDeliveryLoop _delivery;

    private Darq(DarqCore core)
    {
        _core = core;
        var options = core.Options;
        DarqInFeed? feed = null;
        var producers = new DarqProducerTable(options);
        var inbox = new DarqInbox(options, () => feed!.Signal());
        var outbox = new DarqOutbox(options);
        var marks = new DarqTruncationMarks(options);
        var pacing = new DarqPacing(core);
        var versions = new DarqVersions(core, pacing);
        var committer = new DarqCommitter(core, producers, inbox, outbox, marks, versions, SignalCommitted);
        bool general = options.Speculation == DarqSpeculationMode.General;
        feed = new DarqInFeed(core, inbox, committer, commitsOnItsOwn: general || options.CommitInterval != Timeout.InfiniteTimeSpan);
        var stepper = new DarqStepper(core, inbox, outbox, marks, committer, feed, holdUncommitted: options.Speculation == DarqSpeculationMode.Off);
        _parked = new DarqParkedDestinations(core);
        var acknowledger = new DarqAcknowledger(core, outbox, _parked, versions);
        _parts = new DarqParts
        {
            Core = core,
            Producers = producers,
            Inbox = inbox,
            Outbox = outbox,
            Marks = marks,
            Pacing = pacing,
            Versions = versions,
            Committer = committer,
            Feed = feed,
            Intake = new DarqIntake(core, producers, inbox, marks, versions, committer, feed),
            Stepper = stepper,
            Batcher = new DarqStepBatcher(core, inbox, stepper),
            Checkpointer = new DarqCheckpointer(core, inbox, outbox, marks, stepper),
            Recovery = new DarqRecovery(core, producers, inbox, outbox, versions, committer),
            Acknowledger = acknowledger,
        };
        _speculation = general ? new GeneralSpeculation(_parts) : new LocalSpeculation(_parts);
        var sender = new DarqSender(core, outbox, new DarqOutReader(core), _parked, acknowledger, _speculation);
        _delivery = new DarqDeliveryLoop(core, outbox, _parked, acknowledger, _speculation, sender);
    }

    /// <summary>The DARQ's name.</summary>
    public string Name => _core.Name;

    /// <summary>The current processor incarnation (0 before the first registration).</summary>
    public long Incarnation => _core.Incarnation;

    /// <summary>The first address still in the log (everything before it is completed and truncated).</summary>
    public long BeginAddress => _core.Log.BeginAddress;

    /// <summary>The address the next entry goes to.</summary>
    public long TailAddress => _core.Log.TailAddress;

    /// <summary>The address up to which the log is durable.</summary>
    public long CommittedUntilAddress => _core.Log.CommittedUntilAddress;

    /// <summary>The largest payload of one message, in bytes (<see cref="DarqOptions.MaxMessageSize"/>).</summary>
    public int MaxMessageSize => _core.Options.MaxMessageSize;

    /// <summary>The number of IN and SELF messages not yet consumed.</summary>
    public int UnconsumedCount => _parts.Inbox.Count;

    /// <summary>
    /// The number of unconsumed plain SELF messages (activities excluded): what a checkpoint would hand its snapshot
    /// function. Kept up to date by steps, checkpoints, recovery and rollbacks; O(1) to read.
    /// </summary>
    public int UnconsumedSelfCount => _parts.Inbox.SelfCount;

    /// <summary>The sum of the payload lengths of the unconsumed plain SELF messages, in bytes (see <see cref="UnconsumedSelfCount"/>).</summary>
    public long UnconsumedSelfBytes => _parts.Inbox.SelfBytes;

    /// <summary>
    /// The payload bytes of the IN messages held in memory (unconsumed, handed to the processor or waiting for one): at
    /// most <see cref="DarqOptions.MaxBufferedInBytes"/> but for one message, plus what the processor read and holds
    /// unconsumed when it is given more (see the option).
    /// </summary>
    public long BufferedInBytes => _parts.Inbox.BufferedInBytes;

    /// <summary>How many unconsumed IN messages wait in the log only, to be read back when the processor gets to them.</summary>
    public int SpilledInCount => _parts.Inbox.SpilledInCount;

    /// <summary>The number of OUT messages not yet acknowledged by their destinations.</summary>
    public int PendingOutCount => _parts.Outbox.Count;

    /// <summary>
    /// The payload bytes of the pending OUT messages held in memory for delivery: at most
    /// <see cref="DarqOptions.MaxBufferedOutBytes"/>. Always 0 without <see cref="DarqOptions.Destinations"/>.
    /// </summary>
    public long BufferedOutBytes => _parts.Outbox.BufferedBytes;

    /// <summary>
    /// How many pending OUT messages wait in the log only: with <see cref="DarqOptions.Destinations"/> those beyond
    /// <see cref="DarqOptions.MaxBufferedOutBytes"/>, which delivery reads back when it sends them; without, all.
    /// </summary>
    public int SpilledOutCount => _parts.Outbox.SpilledCount;

    /// <summary>
    /// The destinations that refused their oldest pending OUT message for good (<see cref="DarqDeliveryRefusedException"/>):
    /// nothing more is sent to them until <see cref="RetryParkedDelivery"/>, <see cref="DarqOptions.ParkedDeliveryRetryInterval"/>,
    /// a discard of that message (<see cref="DiscardOutAsync"/>) or a reopen. Their messages stay pending; other
    /// destinations are not held up.
    /// </summary>
    public IReadOnlyList<DarqParkedDelivery> ParkedDeliveries => _parked.List();

    /// <summary>
    /// The destinations delivery is working on: those delivering now, and those waiting after failed attempts (with the
    /// time of their next try). A destination with nothing to deliver, or whose last attempt succeeded and which is not
    /// delivering, is not listed; parked destinations are in <see cref="ParkedDeliveries"/>.
    /// </summary>
    public IReadOnlyList<DarqDeliveryLane> DeliveryLanes => _delivery.Lanes;

    /// <summary>
    /// The DARQ's LibDse StateObject when <see cref="DarqOptions.Speculation"/> is <see cref="DarqSpeculationMode.General"/>
    /// (its versions, world-line and committed version); <see langword="null"/> otherwise.
    /// </summary>
    public StateObject? DseStateObject => _speculation.StateObject;

    /// <summary>
    /// General speculation: whether new actions wait because too many versions are not committed by the coordinator, or
    /// their records fill the commit record (<see cref="DarqOptions.MaxUncommittedVersions"/>,
    /// <see cref="DarqOptions.MaxSpeculationBytes"/>). Always <see langword="false"/> in other modes.
    /// </summary>
    public bool IsBackpressured => _speculation.IsBackpressured;

    /// <summary>General speculation: the persisted versions the coordinator has not committed yet (0 in other modes).</summary>
    public int UncommittedVersionCount => _speculation.UncommittedVersionCount;

    /// <summary>Opens a DARQ on its devices, recovering the state of the last valid commit.</summary>
    /// <param name="options">Devices and settings.</param>
    /// <param name="loggerFactory">Creates the DARQ's logger; <see langword="null"/> for none.</param>
    /// <param name="cancellationToken">Cancels recovery.</param>
    /// <returns>The open DARQ; its group commit, delivery and feed run until it is disposed.</returns>
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
        var (commitManager, fences) = await DarqStorage.OpenAsync(options, loggerFactory, logger, cancellationToken).ConfigureAwait(false);
        FasterLog? log = null;
        try
        {
            log = DarqCore.OpenLog(options, commitManager);
            var darq = new Darq(new DarqCore(options, log, commitManager, fences, logger));
            await darq._parts.Recovery.RecoverAsync(cancellationToken).ConfigureAwait(false);
            await darq._speculation.ConnectAsync(cancellationToken).ConfigureAwait(false);
            darq._parts.Committer.Start();
            darq._parts.Feed.Start();
            if (options.Destinations is { } destinations)
            {
                darq._delivery.Start(destinations);
            }

            DarqInstrumentation.Track(darq);
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

                await DarqCore.ReleaseAsync(fences).ConfigureAwait(false);
            }

            throw;
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

    /// <summary>Appends an IN message without deduplication.</summary>
    /// <param name="payload">The payload (copied), at most <see cref="MaxMessageSize"/> bytes.</param>
    /// <param name="cancellationToken">Cancels waiting for the gate or for log memory; nothing is appended then.</param>
    /// <returns>The message's LSN and the address to await for durability.</returns>
    /// <exception cref="ArgumentException">The payload is larger than <see cref="MaxMessageSize"/>.</exception>
    public ValueTask<DarqEnqueueResult> EnqueueAsync(ReadOnlyMemory<byte> payload, CancellationToken cancellationToken = default)
    {
        _core.CheckPayload(payload.Length, nameof(payload));
        return _speculation.EnqueueAsync(payload, 0, 0, dedup: false, contiguous: false, cancellationToken);
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
        _core.CheckPayload(payload.Length, nameof(payload));
        return _speculation.EnqueueAsync(payload, producerId, sequenceNumber, dedup: true, _core.Options.ContiguousProducerSequences, cancellationToken);
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
    /// messages in LSN order, each after the previous was appended (the delivery loop does): a message overtaken by a
    /// later one would be taken for a duplicate and lost. Gaps in the LSNs are fine.
    /// </remarks>
    public ValueTask<DarqEnqueueResult> ReceiveAsync(DarqDelivery delivery, CancellationToken cancellationToken = default)
    {
        CheckDelivery(delivery);
        return _speculation.ReceiveAsync(delivery, cancellationToken);
    }

    /// <summary>
    /// Receives an OUT message from another DARQ (see <see cref="ReceiveAsync"/>) and returns the header to acknowledge it
    /// with. General speculation: the receive runs in an action started with the delivery's <see cref="DarqDelivery.DseHeader"/>
    /// (commit ordering and world-line rules apply) and returns at once with the header of this DARQ's vertex, which the
    /// source consumes when it records the acknowledgement. Otherwise: waits until the message is durable here and returns
    /// an empty header.
    /// </summary>
    /// <param name="delivery">The message.</param>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <returns>The encoded DSE header of the acknowledgement (empty when this DARQ does not speculate generally).</returns>
    /// <exception cref="DarqMessageRefusedException">The message comes from a rolled-back world-line.</exception>
    /// <exception cref="DseHeaderFormatException">The delivery's header is malformed.</exception>
    public ValueTask<ReadOnlyMemory<byte>> ReceiveSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken = default)
    {
        CheckDelivery(delivery);
        return _speculation.ReceiveSpeculativeAsync(delivery, cancellationToken);
    }

    /// <summary>
    /// Registers a processor: gives it the next incarnation (persisted before this returns), supersedes the previous
    /// processor, and streams to it every unconsumed SELF message, then every unconsumed IN message (each in LSN order,
    /// marked as replay), then live IN traffic. The processor steps (<see cref="DarqProcessor.StepAsync"/>,
    /// <see cref="DarqProcessor.ConsumeAsync"/>) under its incarnation until a newer one registers.
    /// </summary>
    /// <param name="cancellationToken">Cancels waiting for the gate; once the registration is appended it stands.</param>
    /// <returns>The registered processor.</returns>
    public ValueTask<DarqProcessor> RegisterProcessorAsync(CancellationToken cancellationToken = default) => _speculation.RegisterAsync(this, cancellationToken);

    /// <summary>Commits the log up to its current tail, with the DARQ state, and waits until that commit is durable.</summary>
    /// <param name="cancellationToken">Cancels waiting; the commit itself still happens.</param>
    /// <exception cref="IOException">Commit-record writes to the commit device keep failing; the commit is retried in the background.</exception>
    public ValueTask CommitAsync(CancellationToken cancellationToken = default)
    {
        _core.ThrowIfClosed();
        return _parts.Committer.CommitAsync(cancellationToken);
    }

    /// <summary>Waits until the log is durable up to <paramref name="address"/> (from an enqueue or step result).</summary>
    /// <param name="address">The address to wait for.</param>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <remarks>This issues no commit: the group commit (or <see cref="CommitAsync"/>) does.</remarks>
    /// <exception cref="IOException">Commit-record writes to the commit device keep failing; commits are retried in the background.</exception>
    public ValueTask WaitForCommitAsync(long address, CancellationToken cancellationToken = default) => _core.WaitForCommitAsync(address, cancellationToken);

    /// <summary>
    /// Waits until what was appended at <paramref name="address"/> can never be lost: committed to the log, or (general
    /// speculation) inside a version the coordinator committed. The barrier for external consumers and for durable
    /// acknowledgements to non-speculative producers.
    /// </summary>
    /// <param name="address">
    /// An entry's address (a message's LSN), or the <c>DurableAt</c> of an enqueue or step result. General speculation:
    /// the entry at <paramref name="address"/>; when nothing has been appended there yet (the tail, as the
    /// <c>DurableAt</c> of the last entry is), the entry just before it. Pass <c>DurableAt - 1</c> to name exactly the
    /// entry of a result: a later entry at <c>DurableAt</c> may belong to a later version, or be rolled back alone.
    /// </param>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <exception cref="DseRolledBackException">General speculation: the entry was rolled back.</exception>
    public ValueTask WaitForRecoverableAsync(long address, CancellationToken cancellationToken = default)
        => _speculation.WaitForRecoverableAsync(address, cancellationToken);

    /// <summary>
    /// General speculation: waits while new actions are held back (<see cref="IsBackpressured"/>); returns at once
    /// otherwise, and in other modes. For code that advances the StateObject's version itself
    /// (<see cref="StateObject.AdvanceVersionAsync"/>): an explicit advance persists a version even when nothing changed,
    /// which backpressure does not hold back, so such a driver waits here before each advance.
    /// </summary>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <returns>A task that completes once there is room, or at once when the StateObject faulted (its next use throws).</returns>
    /// <exception cref="ObjectDisposedException">The DARQ was disposed while waiting.</exception>
    public ValueTask WaitForSpeculationRoomAsync(CancellationToken cancellationToken = default) => _speculation.WaitForRoomAsync(cancellationToken);

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
        _core.ThrowIfClosed();
        long begin = await _parts.Committer.TruncateAsync(background: false, cancellationToken).ConfigureAwait(false);
        await _parts.Committer.CommitAsync(cancellationToken).ConfigureAwait(false);
        return begin;
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
    public ValueTask WaitForDeliveredAsync(long outLsn, CancellationToken cancellationToken = default)
        => _parts.Acknowledger.WaitForDeliveredAsync(outLsn, cancellationToken);

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
    public ValueTask<int> PendingOutCountAsync(string destination, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(destination);
        return _parts.Acknowledger.PendingOutCountAsync(destination, cancellationToken);
    }

    /// <summary>
    /// Tries a parked destination again now (after its configuration was fixed, say): delivery sends it its oldest pending
    /// OUT message on its next pass.
    /// </summary>
    /// <param name="destination">The destination's name.</param>
    /// <returns>Whether the destination was parked.</returns>
    public bool RetryParkedDelivery(string destination)
    {
        ArgumentException.ThrowIfNullOrEmpty(destination);
        if (!_parked.Retry(destination))
        {
            return false;
        }

        _delivery.Signal();
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
        long durableAt = await _speculation.DiscardAsync(outLsn, cancellationToken).ConfigureAwait(false);
        if (durableAt < 0)
        {
            return false;
        }

        _delivery.Signal();
        await _speculation.EnsureDurableAsync(durableAt, cancellationToken).ConfigureAwait(false);
        return true;
    }

    /// <summary>
    /// The number of producers in the deduplication table (at most <see cref="DarqOptions.MaxProducers"/>), source DARQs
    /// that delivered here included.
    /// </summary>
    /// <param name="cancellationToken">Cancels waiting for the gate.</param>
    /// <returns>The count.</returns>
    public ValueTask<int> ProducerCountAsync(CancellationToken cancellationToken = default) => _parts.Intake.ProducerCountAsync(cancellationToken);

    /// <summary>
    /// The largest sequence number the deduplication table holds for <paramref name="producerId"/>, or
    /// <see langword="null"/> when it does not know the producer (never seen, or retired).
    /// </summary>
    /// <param name="producerId">The producer id (a source DARQ's is <see cref="SourceProducerId"/>).</param>
    /// <param name="cancellationToken">Cancels waiting for the gate.</param>
    /// <returns>The sequence number, or null.</returns>
    public ValueTask<long?> ProducerSequenceAsync(long producerId, CancellationToken cancellationToken = default)
        => _parts.Intake.ProducerSequenceAsync(producerId, cancellationToken);

    /// <summary>
    /// Removes a producer that will never send again from the deduplication table, which frees its slot
    /// (<see cref="DarqOptions.MaxProducers"/>) and its 16 bytes in every commit record, and returns once the removal
    /// can no longer be lost: without <see cref="DarqSpeculationMode.General"/> speculation, once a commit whose table
    /// lacks the producer is durable; under general speculation, once the coordinator committed the version that removed
    /// it (a rollback before that brings the producer back and throws <see cref="DseRolledBackException"/>).
    /// </summary>
    /// <param name="producerId">The producer id (a source DARQ's is <see cref="SourceProducerId"/>, for a DARQ taken out of service).</param>
    /// <param name="cancellationToken">Cancels waiting for room under backpressure or for the gate (nothing changes then), or for the commit (the removal stands).</param>
    /// <returns><see langword="true"/> when the producer was removed; <see langword="false"/> when the table did not hold it.</returns>
    /// <remarks>
    /// A retired producer that sends again is a new producer: every sequence number is taken again (with
    /// <see cref="DarqOptions.ContiguousProducerSequences"/>, from 0), so a resend of a message it sent before the
    /// retirement is appended a second time. Retire a producer only once nothing of it can still be in flight or resent,
    /// and let it send again only after this returned.
    /// </remarks>
    /// <exception cref="IOException">The commit that carries the removal failed (the removal may still become durable with a later commit).</exception>
    /// <exception cref="DseRolledBackException">General speculation: a rollback voided the removal before it became recoverable.</exception>
    public ValueTask<bool> RetireProducerAsync(long producerId, CancellationToken cancellationToken = default)
        => _speculation.RetireProducerAsync(producerId, cancellationToken);

    /// <summary>Stops the background commit, delivery and feed, commits what was appended, and closes the log (and the devices when owned).</summary>
    /// <returns>A task that completes once the DARQ is closed.</returns>
    public async ValueTask DisposeAsync()
    {
        if (!_core.TryClose())
        {
            return;
        }

        DarqInstrumentation.Untrack(this);

        await _core.StopAsync().ConfigureAwait(false);

        // First: no version advance or rollback may run once the log closes.
        await _speculation.DisposeAsync().ConfigureAwait(false);
        foreach (var (loop, name) in new[] { (_parts.Committer.Loop, "commit"), (_delivery.Loop, "delivery"), (_parts.Feed.Loop, "feed") })
        {
            try
            {
                await loop.WaitAsync(LoopStopTimeout, _core.Options.TimeProvider).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                // The loops end by cancellation.
            }
            catch (TimeoutException)
            {
                // Closed regardless: FasterLog keeps the log's memory until the loop's iterator or read lets go of it, and
                // whatever the loop does next fails on the closed DARQ (its processor's stream is closed below).
                DarqLogMessages.LoopDidNotStop(_core.Logger, Name, name, LoopStopTimeout);
            }
        }

        try
        {
            // Bounded: a commit device that stopped answering must not keep the DARQ from closing.
            await _parts.Committer.CommitAsync(CancellationToken.None).AsTask().WaitAsync(FinalCommitTimeout, _core.Options.TimeProvider).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or CommitFailureException or InvalidOperationException or TimeoutException)
        {
            DarqLogMessages.CommitFailed(_core.Logger, e, Name);
        }

        bool storageClosed = true;
        await _core.Gate.WaitAsync().ConfigureAwait(false);
        try
        {
            _core.Processor?.Close();
            _core.Processor = null;
            _parts.Outbox.PulseProgress();

            // Stop retrying commit-record writes first, so FasterLog's commit worker is free when the log is disposed.
            _core.CommitManager.Close();

            // Off this thread, and bounded: FasterLog and FASTER's devices close synchronously and wait for every I/O they
            // issued, and one that never returns must not keep DisposeAsync from returning.
            var closing = Task.Run(_core.CloseStorage);
            try
            {
                await closing.WaitAsync(StorageCloseTimeout, _core.Options.TimeProvider).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                storageClosed = false;
                DarqLogMessages.StorageDidNotClose(_core.Logger, Name, StorageCloseTimeout);
            }
        }
        finally
        {
            _core.Gate.Release();
        }

        // Last: nothing of this instance writes any more. Storage that did not close may still be written to, so its
        // locks stay taken (a new instance on the same files is refused) until the process ends.
        if (storageClosed)
        {
            await _core.ReleaseFencesAsync().ConfigureAwait(false);
        }

        _core.DisposeStopping();
    }

    /// <summary>Steps under <paramref name="incarnation"/> (a processor's, or a remote processor's through the transport).</summary>
    internal ValueTask<DarqStepResult> StepAsync(long incarnation, DarqStep step, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(step);
        if (step.OnlyConsumed < 0)
        {
            // A step that only consumes one message is one small record: it always fits.
            _parts.Stepper.CheckShape(step);
        }

        return _speculation.StepAsync(incarnation, step, cancellationToken);
    }

    /// <summary>A consume-only step under <paramref name="incarnation"/>: the fast path of <see cref="StepAsync"/>, with an 8-byte result.</summary>
    internal ValueTask<DarqConsumeResult> ConsumeAsync(long incarnation, long lsn, CancellationToken cancellationToken = default)
        => _speculation.ConsumeAsync(incarnation, lsn, cancellationToken);

    /// <summary>Steps several steps under <paramref name="incarnation"/> under one gate acquisition; refused whole if any step is refused.</summary>
    internal ValueTask<IReadOnlyList<DarqStepResult>> StepBatchAsync(long incarnation, IReadOnlyList<DarqStep> steps, CancellationToken cancellationToken = default)
    {
        _parts.Batcher.CheckShapes(steps);
        return _speculation.StepBatchAsync(incarnation, steps, cancellationToken);
    }

    /// <summary>Compacts every unconsumed plain SELF message through <paramref name="snapshot"/> under <paramref name="incarnation"/>.</summary>
    internal ValueTask<DarqCheckpointResult> CheckpointAsync(long incarnation, DarqSnapshot snapshot, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(snapshot);
        return _speculation.CheckpointAsync(incarnation, null, null, snapshot, cancellationToken);
    }

    /// <summary>Replaces the named SELF messages by <paramref name="snapshot"/> under <paramref name="incarnation"/>.</summary>
    internal ValueTask<DarqCheckpointResult> CheckpointAsync(long incarnation, IReadOnlyList<long> replace, IReadOnlyList<ReadOnlyMemory<byte>> snapshot,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(replace);
        ArgumentNullException.ThrowIfNull(snapshot);
        if (replace.Count == 0)
        {
            throw new ArgumentException("A checkpoint must replace at least one SELF message (to only add SELF messages, take a step).", nameof(replace));
        }

        _parts.Checkpointer.CheckShape(snapshot, replace.Count);
        return _speculation.CheckpointAsync(incarnation, replace, snapshot, null, cancellationToken);
    }

    /// <summary>Logs that an automatic checkpoint of the processor is due, and which threshold made it so.</summary>
    internal void AutoCheckpointDue(long incarnation, string threshold)
        => DarqLogMessages.AutoCheckpointDue(_core.Logger, Name, incarnation, threshold, UnconsumedSelfCount, UnconsumedSelfBytes);

    /// <summary>Logs an automatic checkpoint of the processor that failed (and changed nothing).</summary>
    internal void AutoCheckpointFailed(Exception exception, long incarnation) => DarqLogMessages.AutoCheckpointFailed(_core.Logger, exception, Name, incarnation);

    /// <summary>
    /// Receives a delivered OUT message for a transport and returns when it may be acknowledged. With a
    /// <see cref="DarqDelivery.DseHeader"/> and general speculation on: in an action consuming the header, at once, with
    /// this DARQ's header (as <see cref="ReceiveSpeculativeAsync"/>). Otherwise: once the message (or the original it
    /// duplicates) is durable here, or under general speculation recoverable, with an empty header.
    /// </summary>
    internal ValueTask<(DarqEnqueueResult Result, ReadOnlyMemory<byte> Header)> ReceiveForTransportAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        CheckDelivery(delivery);
        return _speculation.ReceiveForTransportAsync(delivery, cancellationToken);
    }

    /// <summary>Receives a delivery and returns once it (or the original it duplicates) may be acknowledged without a header.</summary>
    internal ValueTask<DarqEnqueueResult> ReceiveDurablyAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        CheckDelivery(delivery);
        return _speculation.ReceiveDurablyAsync(delivery, cancellationToken);
    }

    /// <summary>
    /// Receives a batch of delivered OUT messages of one source (increasing source LSNs), each deduplicated as
    /// <see cref="ReceiveAsync"/> does, and returns once all of them are appended: each message's result, and the address
    /// that must be durable for all of them (or the originals they duplicate) to be. Every message is checked before any
    /// is appended, so a refused batch changes nothing; a batch that fails later may have appended a prefix, which a
    /// resend finds duplicated.
    /// </summary>
    /// <exception cref="ArgumentException">The batch is empty, mixes sources, is out of LSN order, or a payload is too large; nothing was appended.</exception>
    internal async ValueTask<(DarqEnqueueResult[] Results, long DurableAt)> ReceiveBatchAsync(IReadOnlyList<DarqDelivery> deliveries,
        CancellationToken cancellationToken)
    {
        CheckBatch(deliveries);
        var results = new DarqEnqueueResult[deliveries.Count];
        long durableAt = 0;
        for (int i = 0; i < results.Length; i++)
        {
            results[i] = await _speculation.ReceiveAsync(deliveries[i], cancellationToken).ConfigureAwait(false);
            durableAt = Math.Max(durableAt, results[i].DurableAt);
        }

        return (results, durableAt);
    }

    /// <summary>As <see cref="ReceiveBatchAsync"/>, and returns once the batch is durable here (or, under general speculation, recoverable).</summary>
    internal async ValueTask<DarqEnqueueResult[]> ReceiveBatchDurablyAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
    {
        var (results, durableAt) = await ReceiveBatchAsync(deliveries, cancellationToken).ConfigureAwait(false);
        await EnsureDurableAsync(durableAt, cancellationToken).ConfigureAwait(false);
        return results;
    }

    /// <summary>
    /// Waits until the entry ending at <paramref name="address"/> may be acknowledged: committed (waiting for the group
    /// commit, or committing when there is none), or under general speculation inside the recoverable boundary.
    /// </summary>
    internal ValueTask EnsureDurableAsync(long address, CancellationToken cancellationToken) => _speculation.EnsureDurableAsync(address, cancellationToken);

    /// <summary>What a delivery pass would collect now, as (LSN, destination) in collection order; for tests.</summary>
    internal ValueTask<List<(long Lsn, string Destination)>> CollectDeliverableForTestAsync() => _delivery.CollectForTestAsync();

    /// <summary>The feed of the spilled IN backlog; for tests.</summary>
    internal DarqInFeed InFeedForTest => _parts.Feed;

    /// <summary>The LSN of the earliest OUT message to <paramref name="destination"/> still pending, or -1; for tests, on a quiet DARQ.</summary>
    internal long EarliestPendingOut(string destination) => _parts.Outbox.Earliest(destination);

    /// <summary>Releases what a process's death would release (local lock files): for in-process tests that abandon an instance as a crash.</summary>
    internal ValueTask ReleaseFencesAsProcessExitWouldAsync() => _core.ReleaseFencesAsProcessExitWouldAsync();

    /// <summary>After every commit: wakes delivery and the feed (spilled messages are read back once committed), and releases newly committed messages to a processor that holds them.</summary>
    private void SignalCommitted()
    {
        _delivery?.Signal();
        _core.Processor?.ReleaseCommitted();
        _parts?.Feed.Signal();
    }

    /// <summary>The checks every receive makes before it appends.</summary>
    private void CheckDelivery(DarqDelivery delivery)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(delivery.SourceLsn);
        _core.CheckPayload(delivery.Payload.Length, nameof(delivery));
    }

    private void CheckBatch(IReadOnlyList<DarqDelivery> deliveries)
    {
        ArgumentNullException.ThrowIfNull(deliveries);
        if (deliveries.Count == 0)
        {
            throw new ArgumentException("A delivery batch holds at least one message.", nameof(deliveries));
        }

        for (int i = 0; i < deliveries.Count; i++)
        {
            var delivery = deliveries[i];
            if (string.IsNullOrEmpty(delivery.Source) || delivery.Source != deliveries[0].Source)
            {
                throw new ArgumentException($"Message {i} of the delivery batch comes from '{delivery.Source}', not '{deliveries[0].Source}': a batch has one source.", nameof(deliveries));
            }

            if (delivery.SourceLsn < 0 || (i > 0 && delivery.SourceLsn <= deliveries[i - 1].SourceLsn))
            {
                throw new ArgumentException(
                    $"Message {i} of the delivery batch has source LSN {delivery.SourceLsn}; LSNs are nonnegative and increase through a batch.", nameof(deliveries));
            }

            if (delivery.Payload.Length > MaxMessageSize)
            {
                throw new ArgumentException(
                    $"Message {i} of the delivery batch has {delivery.Payload.Length} bytes; DARQ '{Name}' accepts at most {MaxMessageSize} (DarqOptions.MaxMessageSize).",
                    nameof(deliveries));
            }
        }
    }
}
