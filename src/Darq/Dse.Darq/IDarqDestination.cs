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
}
