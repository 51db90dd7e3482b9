namespace Dse.Darq;

/// <summary>
/// How a DARQ speculates, chosen once at open (<see cref="DarqOptions.Speculation"/>): every operation that changes the
/// DARQ, waits for durability or sends OUT messages goes through it. <see cref="LocalSpeculation"/> is speculation off
/// and intra-participant speculation; <see cref="GeneralSpeculation"/> runs each operation in a LibDse action.
/// </summary>
internal abstract class DarqSpeculation : IAsyncDisposable
{
    protected DarqSpeculation(DarqParts parts)
    {
        Parts = parts;
    }

    /// <summary>The DARQ's LibDse StateObject under general speculation; null otherwise.</summary>
    public virtual StateObject? StateObject => null;

    /// <summary>Whether new actions wait for the coordinator to commit (general speculation's backpressure).</summary>
    public virtual bool IsBackpressured => false;

    /// <summary>The persisted versions the coordinator has not committed yet (0 outside general speculation).</summary>
    public virtual int UncommittedVersionCount => 0;

    /// <summary>OUT messages at or after this address are not sent yet (they are not committed, where that matters).</summary>
    public abstract long DeliverableBelow { get; }

    /// <summary>How many OUT messages one delivery carries.</summary>
    public abstract int DeliveryBatchSize { get; }

    /// <summary>How many deliveries may be in flight to one destination (appended there, not yet acknowledged).</summary>
    public abstract int DeliveryWindow { get; }

    protected DarqParts Parts { get; }

    /// <summary>Connects to the coordinator when the mode needs one; called once, after recovery.</summary>
    public virtual Task ConnectAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    /// <summary>Waits while backpressure holds new actions; at once outside general speculation.</summary>
    public virtual ValueTask WaitForRoomAsync(CancellationToken cancellationToken) => ValueTask.CompletedTask;

    public abstract ValueTask<DarqEnqueueResult> EnqueueAsync(ReadOnlyMemory<byte> payload, long producerId, long sequenceNumber, bool dedup, bool contiguous,
        CancellationToken cancellationToken);

    /// <summary>Receives a delivered OUT message, deduplicated by (source, source LSN); consumes its header where the mode does.</summary>
    public abstract ValueTask<DarqEnqueueResult> ReceiveAsync(DarqDelivery delivery, CancellationToken cancellationToken);

    /// <summary>Receives a delivery and returns once it (or the original it duplicates) may be acknowledged without a header.</summary>
    public async ValueTask<DarqEnqueueResult> ReceiveDurablyAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        var result = await ReceiveAsync(delivery, cancellationToken).ConfigureAwait(false);
        await EnsureDurableAsync(result.DurableAt, cancellationToken).ConfigureAwait(false);
        return result;
    }

    /// <summary>
    /// Receives a delivered OUT message and returns when it may be acknowledged, with the acknowledgement's header: at once
    /// with this DARQ's header when the delivery carries one the mode consumes, otherwise (as here) once durable with none.
    /// </summary>
    public virtual async ValueTask<(DarqEnqueueResult Result, ReadOnlyMemory<byte> Header)> ReceiveForTransportAsync(DarqDelivery delivery,
        CancellationToken cancellationToken)
        => (await ReceiveDurablyAsync(delivery, cancellationToken).ConfigureAwait(false), ReadOnlyMemory<byte>.Empty);

    /// <summary>
    /// Receives a delivered OUT message and returns the acknowledgement's header: under general speculation at once, in an
    /// action consuming the delivery's header (none is a local action), with this DARQ's header; otherwise once durable,
    /// with none.
    /// </summary>
    public abstract ValueTask<ReadOnlyMemory<byte>> ReceiveSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken);

    public abstract ValueTask<DarqProcessor> RegisterAsync(Darq darq, CancellationToken cancellationToken);

    public abstract ValueTask<DarqStepResult> StepAsync(long incarnation, DarqStep step, CancellationToken cancellationToken);

    public abstract ValueTask<DarqConsumeResult> ConsumeAsync(long incarnation, long lsn, CancellationToken cancellationToken);

    public abstract ValueTask<IReadOnlyList<DarqStepResult>> StepBatchAsync(long incarnation, IReadOnlyList<DarqStep> steps, CancellationToken cancellationToken);

    public abstract ValueTask<DarqCheckpointResult> CheckpointAsync(long incarnation, IReadOnlyList<long>? replace, IReadOnlyList<ReadOnlyMemory<byte>>? payloads,
        DarqSnapshot? snapshot, CancellationToken cancellationToken);

    /// <summary>Appends the discard of a pending OUT message; returns the address after its ACK entry, or -1 when nothing is pending there.</summary>
    public abstract ValueTask<long> DiscardAsync(long outLsn, CancellationToken cancellationToken);

    /// <summary>Retires a producer and returns once the retirement can no longer be lost; false when the table did not hold it.</summary>
    public abstract ValueTask<bool> RetireProducerAsync(long producerId, CancellationToken cancellationToken);

    /// <summary>Waits until what was appended at <paramref name="address"/> can never be lost (the barrier for the outside world).</summary>
    public abstract ValueTask WaitForRecoverableAsync(long address, CancellationToken cancellationToken);

    /// <summary>Waits until the entry ending at <paramref name="address"/> may be acknowledged durably.</summary>
    public abstract ValueTask EnsureDurableAsync(long address, CancellationToken cancellationToken);

    /// <summary>
    /// Sends a run of OUT messages (all to <paramref name="destination"/>, in LSN order) and returns what became of it.
    /// Throws when the destination failed or refused it: the messages stay pending.
    /// </summary>
    /// <param name="destination">The resolved destination.</param>
    /// <param name="run">The messages, their payloads loaded.</param>
    /// <param name="collectedAtRebuild">How many rebuilds of the pending OUT messages there had been when the run was collected.</param>
    /// <param name="cancellationToken">Cancels the send.</param>
    public abstract ValueTask<SendOutcome> SendAsync(IDarqDestination destination, KeyValuePair<long, PendingOut>[] run, long collectedAtRebuild,
        CancellationToken cancellationToken);

    /// <summary>Records the acknowledgement of a sent run; false when it could not be recorded (the messages stay pending).</summary>
    public abstract ValueTask<bool> AcknowledgeAsync(long[] lsns, ReadOnlyMemory<byte> replyHeader, CancellationToken cancellationToken);

    /// <summary>Stops whatever the mode runs beside the DARQ (first, before the log closes).</summary>
    public virtual ValueTask DisposeAsync() => ValueTask.CompletedTask;

    /// <summary>The deliveries of a run, as the destination receives them.</summary>
    protected DarqDelivery[] Deliveries(KeyValuePair<long, PendingOut>[] run)
    {
        var deliveries = new DarqDelivery[run.Length];
        for (int i = 0; i < run.Length; i++)
        {
            deliveries[i] = new DarqDelivery(Parts.Core.Name, run[i].Key, run[i].Value.Destination, run[i].Value.Payload);
        }

        return deliveries;
    }
}
