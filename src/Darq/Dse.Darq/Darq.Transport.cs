namespace Dse.Darq;

/// <summary>Receiving for a transport (the gRPC DarqService): the enqueue result and the acknowledgement's header together.</summary>
public sealed partial class Darq
{
    /// <summary>
    /// Receives a delivered OUT message for a transport and returns when it may be acknowledged. With a
    /// <see cref="DarqDelivery.DseHeader"/> and general speculation on: in an action consuming the header, at once, with
    /// this DARQ's header (as <see cref="ReceiveSpeculativeAsync"/>). Otherwise: once the message (or the original it
    /// duplicates) is durable here, or under general speculation recoverable, with an empty header.
    /// </summary>
    /// <param name="delivery">The message.</param>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <returns>The enqueue result and the encoded header of the acknowledgement.</returns>
    internal async ValueTask<(DarqEnqueueResult Result, ReadOnlyMemory<byte> Header)> ReceiveForTransportAsync(DarqDelivery delivery,
        CancellationToken cancellationToken)
    {
        if (_dse is null || delivery.DseHeader.IsEmpty)
        {
            return (await ReceiveDurablyAsync(delivery, cancellationToken).ConfigureAwait(false), ReadOnlyMemory<byte>.Empty);
        }

        var (received, header) = await ReceiveInActionAsync(delivery, cancellationToken).ConfigureAwait(false);
        return (received, header.ToArray());
    }

    /// <summary>Receives a delivery and returns once it (or the original it duplicates) may be acknowledged without a header.</summary>
    internal async ValueTask<DarqEnqueueResult> ReceiveDurablyAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        var result = await ReceiveAsync(delivery, cancellationToken).ConfigureAwait(false);
        await EnsureDurableAsync(result.DurableAt, cancellationToken).ConfigureAwait(false);
        return result;
    }

    /// <summary>
    /// Receives a batch of delivered OUT messages of one source (increasing source LSNs), each deduplicated as
    /// <see cref="ReceiveAsync"/> does, and returns once all of them (or the originals they duplicate) are durable here (or,
    /// under general speculation, recoverable): one wait for the whole batch. Every message is checked before any is
    /// appended, so a refused batch changes nothing; a batch that fails later may have appended a prefix, which a resend
    /// finds duplicated.
    /// </summary>
    /// <param name="deliveries">The messages, in increasing source LSN order, all from one source.</param>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <returns>Each message's enqueue result, in order.</returns>
    /// <exception cref="ArgumentException">The batch is empty, mixes sources, is out of LSN order, or a payload is too large; nothing was appended.</exception>
    internal async ValueTask<DarqEnqueueResult[]> ReceiveBatchDurablyAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
    {
        CheckBatch(deliveries);
        var results = new DarqEnqueueResult[deliveries.Count];
        long durableAt = 0;
        for (int i = 0; i < results.Length; i++)
        {
            results[i] = await ReceiveAsync(deliveries[i], cancellationToken).ConfigureAwait(false);
            durableAt = Math.Max(durableAt, results[i].DurableAt);
        }

        await EnsureDurableAsync(durableAt, cancellationToken).ConfigureAwait(false);
        return results;
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

            if (delivery.Payload.Length > _options.MaxMessageSize)
            {
                throw new ArgumentException(
                    $"Message {i} of the delivery batch has {delivery.Payload.Length} bytes; DARQ '{Name}' accepts at most {_options.MaxMessageSize} (DarqOptions.MaxMessageSize).",
                    nameof(deliveries));
            }
        }
    }
}
