using FASTER.core;

namespace Dse.Darq;

/// <summary>Options of a <see cref="Darq"/>; validated when it opens.</summary>
public sealed class DarqOptions
{
    /// <summary>The DARQ's name, used in logs, metrics and error messages. Default <c>"darq"</c>.</summary>
    public string Name { get; set; } = "darq";

    /// <summary>The device holding the DARQ's FasterLog (any device of Dse.Storage). Required.</summary>
    public IDevice? LogDevice { get; set; }

    /// <summary>
    /// The device holding the commit records (FasterLog's commit metadata with the DARQ's cookie); it must not be
    /// the log device. Required.
    /// </summary>
    public IDevice? CommitDevice { get; set; }

    /// <summary>Whether disposing the DARQ disposes both devices. Default <see langword="true"/>.</summary>
    public bool OwnsDevices { get; set; } = true;

    /// <summary>
    /// Whether the DARQ takes exclusive ownership of its storage when it opens, and holds it until disposed
    /// (<see cref="Dse.Storage.StorageFence"/> on both devices). Default <see langword="true"/>. On local files a second
    /// open of the same files, in this process or another, is refused with a <see cref="Dse.Storage.StorageFencedException"/>
    /// naming the lock file (the lock dies with the process, even by <c>kill -9</c>); on page blobs the new instance
    /// takes the storage over (breaking the old instance's lease), and the old instance, if still running, is fenced: its
    /// commits and appends fail with <see cref="Dse.Storage.StorageFencedException"/> and nothing it writes is kept.
    /// Turn off only when something else guarantees a single owner.
    /// </summary>
    public bool ExclusiveStorage { get; set; } = true;

    /// <summary>FasterLog page size in bytes; a step (all its entries) must fit on one page. Default 1 MiB; a power of two, 4 KiB or more.</summary>
    public long PageSize { get; set; } = 1L << 20;

    /// <summary>Memory for the in-memory part of the log in bytes. Default 8 MiB; a power of two, at least two pages.</summary>
    public long MemorySize { get; set; } = 1L << 23;

    /// <summary>Size of a log segment (file or blob) in bytes; truncation frees whole segments. Default 64 MiB; a power of two, at least one page.</summary>
    public long SegmentSize { get; set; } = 1L << 26;

    /// <summary>The largest message payload in bytes (IN, SELF or OUT). Default 256 KiB; at most a quarter of <see cref="PageSize"/>.</summary>
    public int MaxMessageSize { get; set; } = 256 * 1024;

    /// <summary>
    /// The most IN payload bytes an instance keeps in memory, for its processor to read without touching storage. Default
    /// 64 MiB; 0 or more. An IN message that arrives when the budget is used up (or while older ones already wait in the
    /// log only) keeps only its place in memory: its payload is read back from the log, in LSN order, when the processor
    /// gets to it, once it is committed. So a backlog larger than memory waits on disk, not on the heap; a processor that
    /// keeps up never reads its messages back. A message handed to the processor counts until it is consumed; a processor
    /// that has read everything it was handed and holds it unconsumed still gets more, half the budget at a time.
    /// </summary>
    public long MaxBufferedInBytes { get; set; } = 64L << 20;

    /// <summary>
    /// The most bytes of pending OUT payloads (sent by steps, not yet acknowledged by their destination) an instance keeps
    /// in memory for its delivery loop. Default 64 MiB; 0 or more. An OUT message written when the budget is used up keeps
    /// only its place, destination and length in memory: the delivery loop reads its payload back from the log (once
    /// committed) each time it sends it. So a destination that is down for long, while its senders keep stepping, fills
    /// the disk, not the heap. Without <see cref="Destinations"/> no payload is kept at all (nothing in the instance sends).
    /// </summary>
    public long MaxBufferedOutBytes { get; set; } = 64L << 20;

    /// <summary>
    /// The most producers the deduplication table holds; an enqueue from one more producer id is refused. It sizes the
    /// commit records. Default 65,536; between 1 and 4,194,304.
    /// </summary>
    public int MaxProducers { get; set; } = 65_536;

    /// <summary>The largest <see cref="MaxProducers"/> allowed.</summary>
    internal const int MaxProducersLimit = 4_194_304;

    /// <summary>
    /// Whether each producer's sequence numbers must be contiguous: a deduplicated enqueue
    /// (<see cref="Darq.EnqueueAsync(long, long, ReadOnlyMemory{byte}, CancellationToken)"/>) is taken only with the sequence
    /// number one above the largest the DARQ holds for its producer, or 0 for a producer it does not know; a lower one is a
    /// duplicate, as always, and a higher one is refused with <see cref="DarqSequenceGapException"/>, which names the number
    /// expected, and appends nothing. Default <see langword="false"/>: any higher number is taken, and the numbers between are
    /// then refused as duplicates.
    /// </summary>
    /// <remarks>
    /// Turn it on for producers that send several enqueues before they know the earlier ones are safe: under general
    /// speculation a rollback voids the enqueues that were not yet recoverable and restores the producer's number, and a
    /// restart of the DARQ loses what was not persisted; without this check a later enqueue that lands after the rollback is
    /// taken, and the voided ones, resent, are dropped as duplicates. With it, the later one is refused and the producer
    /// resends from the number expected, under the same producer id. It applies to producers only: messages delivered by
    /// other DARQs are numbered by their source LSN, which has gaps, and are never checked for them.
    /// </remarks>
    public bool ContiguousProducerSequences { get; set; }

    /// <summary>
    /// Retires a producer from the deduplication table once it has sent nothing (no enqueue, no resend) for this long, as
    /// <see cref="Darq.RetireProducerAsync"/> would: looked for at a commit (the group commit or <see cref="Darq.CommitAsync"/>),
    /// at most once a second (or an eighth of the period, if shorter), and that commit carries the smaller table. Default <see langword="null"/>: producers are retired by hand only. Not with
    /// <see cref="DarqSpeculationMode.General"/> speculation (retire by hand there).
    /// </summary>
    /// <remarks>
    /// A retired producer that sends again is a new producer, so a resend of a message it sent before is appended a
    /// second time: set this well above the longest time any producer, or source DARQ delivering here, may stay silent
    /// and then resend (an outage included). Idle time is counted in this instance's memory: after a restart every
    /// producer in the table counts as seen at the open, so a restart only ever delays a retirement. The clock is
    /// <see cref="TimeProvider"/>.
    /// </remarks>
    public TimeSpan? RetireIdleProducersAfter { get; set; }

    /// <summary>
    /// Group commit interval: how often the log is committed in the background. Default 5 ms. <see cref="Timeout.InfiniteTimeSpan"/>
    /// turns background commits off (commit with <see cref="Darq.CommitAsync"/>).
    /// </summary>
    public TimeSpan CommitInterval { get; set; } = TimeSpan.FromMilliseconds(5);

    /// <summary>
    /// Whether each background commit first truncates the completed prefix of the log, as far as log memory no longer
    /// holds it: up to <see cref="MemorySize"/> (plus a page) of completed entries stay until the tail evicts them, since
    /// cutting pages still in memory only moves FasterLog's clearing of them onto the appending thread. Default
    /// <see langword="true"/>. <see cref="Darq.TruncateAsync"/> cuts the whole completed prefix.
    /// </summary>
    public bool AutoTruncate { get; set; } = true;

    /// <summary>
    /// Where OUT messages go: a background loop delivers committed OUT entries through it, retries until acknowledged and
    /// records acknowledgements. Default <see langword="null"/>: no delivery, OUT entries stay pending.
    /// </summary>
    public IDarqDestinations? Destinations { get; set; }

    /// <summary>
    /// The first delay before retrying a failed delivery (or an unknown destination); it doubles per failed attempt in a
    /// row, for that destination only (other destinations are not delayed). Default 10 ms.
    /// </summary>
    public TimeSpan DeliveryRetryMinDelay { get; set; } = TimeSpan.FromMilliseconds(10);

    /// <summary>The longest delay between delivery retries. Default 1 s; at least <see cref="DeliveryRetryMinDelay"/>.</summary>
    public TimeSpan DeliveryRetryMaxDelay { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>The largest <see cref="DeliveryBatchSize"/>: one ACK entry lists every LSN of a batch.</summary>
    public const int MaxDeliveryBatchSize = 4096;

    /// <summary>
    /// The most OUT messages sent to one destination in one delivery (<see cref="IDarqDestination.DeliverBatchAsync"/>),
    /// in LSN order, acknowledged by one durable wait at the destination and recorded by one ACK entry. Default 64; 1
    /// sends one message at a time. Under general speculation, deliveries go one at a time.
    /// </summary>
    public int DeliveryBatchSize { get; set; } = 64;

    /// <summary>The most payload bytes in one delivery batch (a larger single message goes alone). Default 1 MiB.</summary>
    public int DeliveryBatchBytes { get; set; } = 1 << 20;

    /// <summary>The largest <see cref="DeliveryWindow"/> accepted.</summary>
    public const int MaxDeliveryWindow = 1024;

    /// <summary>
    /// How many batches (<see cref="DeliveryBatchSize"/>) may be in flight to one destination: appended there and not yet
    /// acknowledged, waiting for the destination's commit. A source sends the next batch as soon as the previous one is
    /// appended, in order, and acknowledges each once the destination made it durable, so throughput to one destination
    /// is about <c>DeliveryWindow * DeliveryBatchSize</c> messages per destination commit rather than one batch. A
    /// destination that cannot say when a batch is appended (<see cref="IDarqDestination.SendBatchAsync"/> not
    /// implemented) and general speculation (one message at a time, each acknowledged before the next) get no window.
    /// Default 32; between 1 and <see cref="MaxDeliveryWindow"/>.
    /// </summary>
    public int DeliveryWindow { get; set; } = 32;

    /// <summary>The largest <see cref="MaxConcurrentDeliveries"/> accepted.</summary>
    public const int MaxConcurrentDeliveriesLimit = 1024;

    /// <summary>
    /// How many destinations are delivered to at once. Each destination has its own lane (its messages in LSN order, in
    /// batches, with its own retry backoff and parking), so a destination that is slow, down or backing off holds up only
    /// its own messages; up to this many lanes deliver concurrently, and a destination beyond them waits for a lane to
    /// finish its turn (oldest pending message first). A lane is a task only while it delivers. Default 16; between 1
    /// and <see cref="MaxConcurrentDeliveriesLimit"/>.
    /// </summary>
    public int MaxConcurrentDeliveries { get; set; } = 16;

    /// <summary>
    /// How long a parked destination (its oldest pending OUT message refused for good, see
    /// <see cref="DarqDeliveryRefusedException"/>) waits before the source tries it again on its own. Default 5 minutes;
    /// <see cref="Timeout.InfiniteTimeSpan"/> tries again only on <see cref="Darq.RetryParkedDelivery"/> or a reopen.
    /// </summary>
    public TimeSpan ParkedDeliveryRetryInterval { get; set; } = TimeSpan.FromMinutes(5);

    /// <summary>
    /// How far the DARQ runs ahead of persistence: <see cref="DarqSpeculationMode.Off"/> (the baseline: nothing is seen or
    /// sent before it is committed), <see cref="DarqSpeculationMode.IntraParticipant"/> (the default: the processor sees
    /// uncommitted IN messages) or <see cref="DarqSpeculationMode.General"/> (LibDse; needs <see cref="Dse"/> and <see cref="Coordinator"/>).
    /// </summary>
    public DarqSpeculationMode Speculation { get; set; } = DarqSpeculationMode.IntraParticipant;

    /// <summary>
    /// General speculation: the options of the DARQ's LibDse StateObject (its <see cref="DseOptions.ObjectId"/>, group
    /// commit period, speculative or not). Required when <see cref="Speculation"/> is <see cref="DarqSpeculationMode.General"/>.
    /// </summary>
    public DseOptions? Dse { get; set; }

    /// <summary>General speculation: the coordinator the StateObject connects to when the DARQ opens. Required then.</summary>
    public IDseCoordinator? Coordinator { get; set; }

    /// <summary>
    /// General speculation: new actions (enqueue, receive, step, registration, checkpoint, acknowledgement, the barrier's
    /// local action) wait while this many persisted versions are not yet committed by the coordinator; they proceed once
    /// the coordinator commits and the versions are pruned. The version under way when the wait starts is still
    /// persisted, so at most one more stands. Default 64; between 1 and <see cref="MaxUncommittedVersionsLimit"/>.
    /// </summary>
    public int MaxUncommittedVersions { get; set; } = 64;

    /// <summary>The largest <see cref="MaxUncommittedVersions"/> accepted.</summary>
    public const int MaxUncommittedVersionsLimit = 4096;

    /// <summary>
    /// General speculation: new actions also wait while the speculation section of the commit record (the uncommitted
    /// versions' records with their deduplication undo tables, and voided ranges) takes at least this many bytes. The
    /// section has <see cref="SpeculationRoom"/> bytes; what is above this budget is headroom for actions already under
    /// way and the versions they persist. Default 8 KiB; between <see cref="MinSpeculationBytes"/> and
    /// <see cref="MaxSpeculationBytesLimit"/>.
    /// </summary>
    public int MaxSpeculationBytes { get; set; } = 8 * 1024;

    /// <summary>The room of the speculation section of a commit record, in bytes (general speculation).</summary>
    public const int SpeculationRoom = DarqCommitState.SpeculationRoom;

    /// <summary>The smallest <see cref="MaxSpeculationBytes"/> accepted.</summary>
    public const int MinSpeculationBytes = 1024;

    /// <summary>The largest <see cref="MaxSpeculationBytes"/> accepted: <see cref="SpeculationRoom"/> less 4 KiB of headroom.</summary>
    public const int MaxSpeculationBytesLimit = SpeculationRoom - (2 * DarqCommitState.RecordReserve);

    /// <summary>The clock of the background commit and delivery loops. Default <see cref="TimeProvider.System"/>.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>The backoff after a failure that followed a wait of <paramref name="delay"/>: the minimum first, then doubling up to the maximum.</summary>
    internal TimeSpan NextRetryDelay(TimeSpan delay)
    {
        if (delay == TimeSpan.Zero)
        {
            return DeliveryRetryMinDelay;
        }

        var doubled = delay * 2;
        return doubled > DeliveryRetryMaxDelay ? DeliveryRetryMaxDelay : doubled;
    }

    internal void Validate()
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(Name);
        if (LogDevice is null)
        {
            throw new ArgumentException("DarqOptions.LogDevice is required.", nameof(LogDevice));
        }

        if (CommitDevice is null)
        {
            throw new ArgumentException("DarqOptions.CommitDevice is required.", nameof(CommitDevice));
        }

        if (ReferenceEquals(LogDevice, CommitDevice))
        {
            throw new ArgumentException("The commit device must be a different device from the log device.", nameof(CommitDevice));
        }

        RequirePowerOfTwo(PageSize, 4096, nameof(PageSize));
        RequirePowerOfTwo(MemorySize, 2 * PageSize, nameof(MemorySize));
        RequirePowerOfTwo(SegmentSize, PageSize, nameof(SegmentSize));
        if (MaxMessageSize < 1 || MaxMessageSize > PageSize / 4)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxMessageSize), MaxMessageSize,
                $"The largest message must be between 1 byte and a quarter of the page size ({PageSize / 4} bytes).");
        }

        if (MaxBufferedInBytes < 0)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxBufferedInBytes), MaxBufferedInBytes, "The buffered IN bytes must be 0 or more.");
        }

        if (MaxBufferedOutBytes < 0)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxBufferedOutBytes), MaxBufferedOutBytes, "The buffered OUT bytes must be 0 or more.");
        }

        if (MaxProducers is < 1 or > MaxProducersLimit)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxProducers), MaxProducers, "The producer limit must be between 1 and 4,194,304.");
        }

        if (CommitInterval != Timeout.InfiniteTimeSpan && CommitInterval <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(CommitInterval), CommitInterval, "The commit interval must be positive or Timeout.InfiniteTimeSpan.");
        }

        if (DeliveryRetryMinDelay <= TimeSpan.Zero || DeliveryRetryMaxDelay < DeliveryRetryMinDelay)
        {
            throw new ArgumentOutOfRangeException(nameof(DeliveryRetryMinDelay), DeliveryRetryMinDelay,
                $"Delivery retry delays must be positive, the maximum ({DeliveryRetryMaxDelay}) at least the minimum.");
        }

        if (DeliveryBatchSize is < 1 or > MaxDeliveryBatchSize)
        {
            throw new ArgumentOutOfRangeException(nameof(DeliveryBatchSize), DeliveryBatchSize,
                $"DarqOptions.DeliveryBatchSize must be between 1 and {MaxDeliveryBatchSize}.");
        }

        if (DeliveryBatchBytes < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(DeliveryBatchBytes), DeliveryBatchBytes, "DarqOptions.DeliveryBatchBytes must be positive.");
        }

        if (DeliveryWindow is < 1 or > MaxDeliveryWindow)
        {
            throw new ArgumentOutOfRangeException(nameof(DeliveryWindow), DeliveryWindow, $"DarqOptions.DeliveryWindow must be between 1 and {MaxDeliveryWindow}.");
        }

        if (MaxConcurrentDeliveries is < 1 or > MaxConcurrentDeliveriesLimit)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxConcurrentDeliveries), MaxConcurrentDeliveries,
                $"DarqOptions.MaxConcurrentDeliveries must be between 1 and {MaxConcurrentDeliveriesLimit}.");
        }

        if (ParkedDeliveryRetryInterval <= TimeSpan.Zero && ParkedDeliveryRetryInterval != Timeout.InfiniteTimeSpan)
        {
            throw new ArgumentOutOfRangeException(nameof(ParkedDeliveryRetryInterval), ParkedDeliveryRetryInterval,
                "DarqOptions.ParkedDeliveryRetryInterval must be positive, or Timeout.InfiniteTimeSpan to retry parked deliveries only on demand.");
        }

        ArgumentNullException.ThrowIfNull(TimeProvider);
        if (!Enum.IsDefined(Speculation))
        {
            throw new ArgumentOutOfRangeException(nameof(Speculation), Speculation, "DarqOptions.Speculation must be Off, IntraParticipant or General.");
        }

        if (MaxUncommittedVersions is < 1 or > MaxUncommittedVersionsLimit)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxUncommittedVersions), MaxUncommittedVersions,
                $"DarqOptions.MaxUncommittedVersions must be between 1 and {MaxUncommittedVersionsLimit}.");
        }

        if (MaxSpeculationBytes is < MinSpeculationBytes or > MaxSpeculationBytesLimit)
        {
            throw new ArgumentOutOfRangeException(nameof(MaxSpeculationBytes), MaxSpeculationBytes,
                $"DarqOptions.MaxSpeculationBytes must be between {MinSpeculationBytes} and {MaxSpeculationBytesLimit} bytes " +
                $"(the commit record's {SpeculationRoom}-byte speculation section less 4 KiB of headroom).");
        }

        if (RetireIdleProducersAfter is { } idle && idle <= TimeSpan.Zero)
        {
            throw new ArgumentOutOfRangeException(nameof(RetireIdleProducersAfter), idle,
                "DarqOptions.RetireIdleProducersAfter must be positive, or null to retire producers by hand only.");
        }

        if (RetireIdleProducersAfter is not null && Speculation == DarqSpeculationMode.General)
        {
            throw new ArgumentException(
                "DarqOptions.RetireIdleProducersAfter is not supported with Speculation General: a retirement there must wait for its version's commit; " +
                "call Darq.RetireProducerAsync instead.", nameof(RetireIdleProducersAfter));
        }

        if (Speculation == DarqSpeculationMode.General && (Dse is null || Coordinator is null))
        {
            throw new ArgumentException(
                $"DarqOptions.Speculation General needs DarqOptions.Dse and DarqOptions.Coordinator (missing: {(Dse is null ? "Dse" : "Coordinator")}).",
                Dse is null ? nameof(Dse) : nameof(Coordinator));
        }
    }

    private static void RequirePowerOfTwo(long value, long minimum, string name)
    {
        if (value < minimum || !long.IsPow2(value))
        {
            throw new ArgumentOutOfRangeException(name, value, $"{name} must be a power of two of at least {minimum} bytes.");
        }
    }
}
