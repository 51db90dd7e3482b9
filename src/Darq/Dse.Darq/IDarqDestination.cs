namespace Dse.Darq;

/// <summary>A DARQ that OUT messages can be delivered to (in process, or through a transport).</summary>
public interface IDarqDestination
{
    /// <summary>
    /// Enqueues a delivered OUT message as an IN message, deduplicated by (source, source LSN), and completes only once
    /// the message (or the original it duplicates) is durable at the destination: that completion is the acknowledgement.
    /// </summary>
    /// <param name="delivery">The message and where it comes from.</param>
    /// <param name="cancellationToken">Cancels the delivery; an unacknowledged delivery is retried.</param>
    /// <remarks>Any exception means "not acknowledged": the source retries, and deduplication absorbs a repeat.</remarks>
    ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken);

    /// <summary>
    /// Enqueues several delivered OUT messages of one source, in their order (increasing source LSNs), each deduplicated
    /// by (source, source LSN), and completes only once all of them (or the originals they duplicate) are durable at the
    /// destination: that completion acknowledges every one. The default delivers them one by one with
    /// <see cref="DeliverAsync"/>; a destination overrides it to wait for durability once.
    /// </summary>
    /// <param name="deliveries">The messages, all from the same source to this destination, in increasing source LSN order.</param>
    /// <param name="cancellationToken">Cancels the delivery; an unacknowledged batch is retried.</param>
    /// <remarks>
    /// Any exception means "none acknowledged": the source resends, and deduplication absorbs the messages that had
    /// arrived. A <see cref="DarqDeliveryRefusedException"/> makes the source deliver the batch one message at a time, so
    /// that the refusal is pinned on one message.
    /// </remarks>
    async ValueTask DeliverBatchAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(deliveries);
        for (int i = 0; i < deliveries.Count; i++)
        {
            await DeliverAsync(deliveries[i], cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Appends several delivered OUT messages of one source, as <see cref="DeliverBatchAsync"/> does, but returns once they
    /// are appended, with the wait that acknowledges them once they are durable. This lets a source keep several batches
    /// in flight to one destination (<see cref="DarqOptions.DeliveryWindow"/>): it sends the next batch only after this
    /// returned for the previous one, so batches are appended in the order sent, and it acknowledges each batch only once
    /// its wait completed. The default delivers with <see cref="DeliverBatchAsync"/> and returns a batch durable already.
    /// </summary>
    /// <param name="deliveries">The messages, all from the same source to this destination, in increasing source LSN order.</param>
    /// <param name="cancellationToken">Cancels the delivery; an unacknowledged batch is retried.</param>
    /// <returns>The appended batch; its wait fails when the destination may have lost it.</returns>
    /// <remarks>
    /// An implementation must append a batch only on the same destination instance that appended the batches sent before it
    /// and not yet acknowledged (one that restarted meanwhile may have lost them: appending a later batch there would raise
    /// its deduplication mark over them). Any exception means "none appended"; a <see cref="DarqDeliveryRefusedException"/>
    /// makes the source deliver the batch one message at a time, as for <see cref="DeliverBatchAsync"/>.
    /// </remarks>
    async ValueTask<DarqSentBatch> SendBatchAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
    {
        await DeliverBatchAsync(deliveries, cancellationToken).ConfigureAwait(false);
        return DarqSentBatch.Durable;
    }

    /// <summary>
    /// Whether <see cref="DeliverSpeculativeAsync"/> takes part in the source's LibDse cluster: it consumes the delivery's
    /// <see cref="DarqDelivery.DseHeader"/>, so that the destination rolls back with the source. The default is
    /// <see langword="false"/>: a source under general speculation then sends an OUT message only once the step that
    /// wrote it is recoverable (as a barrier would), because such a destination keeps what it received whatever the
    /// source later rolls back.
    /// </summary>
    bool ReceivesSpeculatively => false;

    /// <summary>
    /// General speculation: enqueues a delivered OUT message, consuming its <see cref="DarqDelivery.DseHeader"/>, and
    /// returns the encoded header of the destination's acknowledgement (empty: no dependency). The acknowledgement may
    /// come before the message is durable: the header carries the dependency instead. The default delivers with
    /// <see cref="DeliverAsync"/> (durable acknowledgement) and returns an empty header.
    /// </summary>
    /// <param name="delivery">The message, where it comes from, and its header.</param>
    /// <param name="cancellationToken">Cancels the delivery; an unacknowledged delivery is retried.</param>
    /// <returns>The acknowledgement's encoded DSE header.</returns>
    /// <remarks>Any exception means "not acknowledged": the source retries, and deduplication absorbs a repeat.</remarks>
    async ValueTask<ReadOnlyMemory<byte>> DeliverSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        await DeliverAsync(delivery, cancellationToken).ConfigureAwait(false);
        return ReadOnlyMemory<byte>.Empty;
    }
}
