using Dse.Darq.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Darq.Grpc;

/// <summary>
/// A DARQ on another server as a destination of OUT messages: delivers through <c>DarqService.Deliver</c>, which replies
/// only once the message is durable there (under general speculation, <see cref="DeliverSpeculativeAsync"/> carries the DSE
/// headers instead and the reply comes at once). Any failure (unreachable, UNAVAILABLE, a timeout) means "not acknowledged":
/// the source's delivery loop retries, and the destination deduplicates the resend by (source, source LSN). A refusal for
/// good (NOT_FOUND, INVALID_ARGUMENT, UNIMPLEMENTED, or a header the destination cannot take) is thrown as a
/// <see cref="DarqDeliveryRefusedException"/>, which parks the destination at the source.
/// </summary>
public sealed class GrpcDarqDestination : IDarqDestination
{
    private readonly DarqService.DarqServiceClient _client;
    private readonly string? _remoteName;

    /// <summary>Set once the server answered UNIMPLEMENTED to DeliverBatch: batches then go one message per Deliver.</summary>
    private bool _noBatchRpc;

    /// <summary>Creates a destination over a channel to the server hosting it.</summary>
    /// <param name="channel">The channel (the caller owns it).</param>
    /// <param name="remoteName">The DARQ's name on that server; <see langword="null"/> for the destination name the OUT message carries.</param>
    public GrpcDarqDestination(ChannelBase channel, string? remoteName = null)
        : this((channel ?? throw new ArgumentNullException(nameof(channel))).CreateCallInvoker(), remoteName)
    {
    }

    /// <summary>Creates a destination over a call invoker (for example a channel with interceptors).</summary>
    /// <param name="callInvoker">The call invoker; the caller owns its channel.</param>
    /// <param name="remoteName">The DARQ's name on that server; <see langword="null"/> for the destination name the OUT message carries.</param>
    public GrpcDarqDestination(CallInvoker callInvoker, string? remoteName = null)
    {
        ArgumentNullException.ThrowIfNull(callInvoker);
        if (remoteName is not null)
        {
            ArgumentException.ThrowIfNullOrEmpty(remoteName);
        }

        _client = new DarqService.DarqServiceClient(callInvoker);
        _remoteName = remoteName;
    }

    /// <summary>How long one delivery attempt may take before it counts as failed (and is retried). Default 30 s.</summary>
    public TimeSpan AttemptTimeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Whether the remote DARQ is under general speculation in the same LibDse cluster as the source (it consumes the
    /// source's DSE header and rolls back with it). Then a <c>General</c> source sends its OUT messages at once, with
    /// <see cref="DeliverSpeculativeAsync"/>; otherwise (the default, safe for any destination) only once the step that
    /// wrote them is recoverable. A remote DARQ that is not <c>General</c> refuses a header (FAILED_PRECONDITION), so
    /// setting this wrongly stops delivery (and logs why) rather than risking a message from rolled-back state.
    /// </summary>
    public bool ReceivesSpeculatively { get; init; }

    /// <inheritdoc />
    public async ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        var request = new DeliverRequest
        {
            Darq = _remoteName ?? delivery.Destination,
            Source = delivery.Source,
            SourceLsn = delivery.SourceLsn,
            Payload = ByteString.CopyFrom(delivery.Payload.Span),
        };
        try
        {
            await _client.DeliverAsync(request, deadline: DateTime.UtcNow + AttemptTimeout, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException e) when (DarqRpcErrors.IsDeliveryRefusedForGood(e))
        {
            throw new DarqDeliveryRefusedException(request.Darq, $"{e.StatusCode}: {e.Status.Detail}", e);
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
        {
            // The delivery loop ends on its own cancellation only as OperationCanceledException (a closing DARQ).
            throw new OperationCanceledException($"Delivering OUT message {delivery.SourceLsn} of DARQ '{delivery.Source}' to '{request.Darq}' was cancelled.",
                e, cancellationToken);
        }
    }

    /// <summary>
    /// Delivers consecutive OUT messages of one source with one <c>DeliverBatch</c> call, acknowledged once all are durable
    /// at the destination. A server without that method (UNIMPLEMENTED: an older build) gets them one per <c>Deliver</c>
    /// call, from then on.
    /// </summary>
    /// <param name="deliveries">The messages, all from one source to this destination, in increasing source LSN order.</param>
    /// <param name="cancellationToken">Cancels the delivery; an unacknowledged batch is retried.</param>
    public async ValueTask DeliverBatchAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(deliveries);
        if (Volatile.Read(ref _noBatchRpc) || deliveries.Count == 1)
        {
            for (int i = 0; i < deliveries.Count; i++)
            {
                await DeliverAsync(deliveries[i], cancellationToken).ConfigureAwait(false);
            }

            return;
        }

        var request = new DeliverBatchRequest { Darq = _remoteName ?? deliveries[0].Destination, Source = deliveries[0].Source };
        foreach (var delivery in deliveries)
        {
            request.Messages.Add(new DeliveredMessage { SourceLsn = delivery.SourceLsn, Payload = ByteString.CopyFrom(delivery.Payload.Span) });
        }

        try
        {
            await _client.DeliverBatchAsync(request, deadline: DateTime.UtcNow + AttemptTimeout, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.Unimplemented)
        {
            Volatile.Write(ref _noBatchRpc, true);
            await DeliverBatchAsync(deliveries, cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException e) when (DarqRpcErrors.IsDeliveryRefusedForGood(e))
        {
            throw new DarqDeliveryRefusedException(request.Darq, $"{e.StatusCode}: {e.Status.Detail}", e);
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
        {
            throw new OperationCanceledException(
                $"Delivering {deliveries.Count} OUT messages of DARQ '{request.Source}' from LSN {deliveries[0].SourceLsn} to '{request.Darq}' was cancelled.",
                e, cancellationToken);
        }
    }

    /// <summary>
    /// General speculation: delivers with the source's <see cref="DarqDelivery.DseHeader"/>; the destination replies at
    /// once (before the message is durable there) with the header of its acknowledgement, which this returns. A
    /// destination that does not speculate generally replies once the message is durable, with an empty header.
    /// </summary>
    /// <param name="delivery">The message, where it comes from, and its header.</param>
    /// <param name="cancellationToken">Cancels the delivery; an unacknowledged delivery is retried.</param>
    /// <returns>The acknowledgement's encoded DSE header.</returns>
    /// <exception cref="DarqMessageRefusedException">The destination refused the header's world-line (a rollback left it behind).</exception>
    public async ValueTask<ReadOnlyMemory<byte>> DeliverSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        var request = new DeliverRequest
        {
            Darq = _remoteName ?? delivery.Destination,
            Source = delivery.Source,
            SourceLsn = delivery.SourceLsn,
            Payload = ByteString.CopyFrom(delivery.Payload.Span),
            DseHeader = ByteString.CopyFrom(delivery.DseHeader.Span),
        };
        DeliverReply reply;
        try
        {
            reply = await _client.DeliverAsync(request, deadline: DateTime.UtcNow + AttemptTimeout, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException e) when (DarqRpcErrors.ToDarqException(e) is DarqMessageRefusedException refused)
        {
            throw refused;
        }
        catch (RpcException e) when (DarqRpcErrors.IsDeliveryRefusedForGood(e))
        {
            throw new DarqDeliveryRefusedException(request.Darq, $"{e.StatusCode}: {e.Status.Detail}", e);
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
        {
            // As DeliverAsync: the delivery loop ends on its own cancellation only as OperationCanceledException.
            throw new OperationCanceledException($"Delivering OUT message {delivery.SourceLsn} of DARQ '{delivery.Source}' to '{request.Darq}' was cancelled.",
                e, cancellationToken);
        }

        return reply.DseHeader.Memory;
    }
}
