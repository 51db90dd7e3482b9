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
}
