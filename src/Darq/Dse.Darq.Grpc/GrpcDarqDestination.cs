using System.Collections.Concurrent;
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

    /// <summary>
    /// Per source and remote DARQ name, the instance the source's last append-only batch went to: its next batch may be
    /// appended only there (<c>expected_instance</c>). Cleared when the server says it restarted, so that the source's
    /// resend goes to the new instance.
    /// </summary>
    private readonly ConcurrentDictionary<(string Source, string Darq), long> _instances = new();

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
        if (!Volatile.Read(ref _noBatchRpc) && deliveries.Count > 1
            && await CallBatchAsync(deliveries, appendOnly: false, cancellationToken).ConfigureAwait(false) is not null)
        {
            return;
        }

        for (int i = 0; i < deliveries.Count; i++)
        {
            await DeliverAsync(deliveries[i], cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Appends consecutive OUT messages of one source with one append-only <c>DeliverBatch</c> call and returns once the
    /// server appended them, with a <c>WaitForCommit</c> on that instance as the wait that acknowledges them. A batch is
    /// appended only on the instance that appended this source's previous batch; when the server restarted since, the call
    /// fails (nothing appended) and the source resends from its first unacknowledged message. A server that predates
    /// append-only batches replies once they are durable; a server without <c>DeliverBatch</c> gets one <c>Deliver</c> per
    /// message.
    /// </summary>
    /// <param name="deliveries">The messages, all from one source to this destination, in increasing source LSN order.</param>
    /// <param name="cancellationToken">Cancels the delivery; an unacknowledged batch is retried.</param>
    /// <returns>The appended batch.</returns>
    public async ValueTask<DarqSentBatch> SendBatchAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(deliveries);
        if (deliveries.Count == 0)
        {
            throw new ArgumentException("A delivery batch holds at least one message.", nameof(deliveries));
        }

        if (Volatile.Read(ref _noBatchRpc) || await CallBatchAsync(deliveries, appendOnly: true, cancellationToken).ConfigureAwait(false) is not { } reply)
        {
            await DeliverBatchAsync(deliveries, cancellationToken).ConfigureAwait(false);
            return DarqSentBatch.Durable;
        }

        if (reply.Instance == 0)
        {
            // A server that predates append-only batches: it replied once they were durable.
            return DarqSentBatch.Durable;
        }

        var key = (deliveries[0].Source, _remoteName ?? deliveries[0].Destination);
        _instances[key] = reply.Instance;
        long durableAt = reply.DurableAt;
        long instance = reply.Instance;
        return new DarqSentBatch(token => WaitForCommitAsync(key, durableAt, instance, token));
    }

    /// <summary>
    /// One <c>DeliverBatch</c> call for <paramref name="deliveries"/>, append-only on the instance that appended this
    /// source's previous batch or durable; null when the server has no such method (an older build), from then on.
    /// </summary>
    private async ValueTask<DeliverBatchReply?> CallBatchAsync(IReadOnlyList<DarqDelivery> deliveries, bool appendOnly, CancellationToken cancellationToken)
    {
        string darq = _remoteName ?? deliveries[0].Destination;
        var key = (deliveries[0].Source, darq);
        var request = new DeliverBatchRequest { Darq = darq, Source = deliveries[0].Source };
        if (appendOnly)
        {
            request.AppendOnly = true;
            request.ExpectedInstance = _instances.GetValueOrDefault(key);
        }

        foreach (var delivery in deliveries)
        {
            request.Messages.Add(new DeliveredMessage { SourceLsn = delivery.SourceLsn, Payload = ByteString.CopyFrom(delivery.Payload.Span) });
        }

        try
        {
            return await _client.DeliverBatchAsync(request, deadline: DateTime.UtcNow + AttemptTimeout, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.Unimplemented)
        {
            Volatile.Write(ref _noBatchRpc, true);
            return null;
        }
        catch (RpcException e) when (appendOnly && e.Trailers.GetValue(DarqRpcErrors.ErrorKey) == DarqRpcErrors.InstanceChanged)
        {
            // The resend (from the first unacknowledged message) goes to the new instance.
            _instances.TryRemove(new KeyValuePair<(string, string), long>(key, request.ExpectedInstance));
            throw;
        }
        catch (RpcException e) when (DarqRpcErrors.IsDeliveryRefusedForGood(e))
        {
            throw new DarqDeliveryRefusedException(darq, $"{e.StatusCode}: {e.Status.Detail}", e);
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
        {
            throw new OperationCanceledException(
                $"Delivering {deliveries.Count} OUT messages of DARQ '{request.Source}' from LSN {deliveries[0].SourceLsn} to '{darq}' was cancelled.",
                e, cancellationToken);
        }
    }

    /// <summary>
    /// Waits until the appended batch is committed on the instance that appended it; fails when that instance is gone, and
    /// then forgets it, so that the resend goes to the new instance at once.
    /// </summary>
    private async ValueTask WaitForCommitAsync((string Source, string Darq) key, long address, long instance, CancellationToken cancellationToken)
    {
        try
        {
            await _client.WaitForCommitAsync(new WaitForCommitRequest { Darq = key.Darq, Address = address, Instance = instance },
                deadline: DateTime.UtcNow + AttemptTimeout, cancellationToken: cancellationToken).ConfigureAwait(false);
        }
        catch (RpcException e) when (e.Trailers.GetValue(DarqRpcErrors.ErrorKey) == DarqRpcErrors.StaleIncarnation)
        {
            _instances.TryRemove(new KeyValuePair<(string, string), long>(key, instance));
            throw;
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
        {
            throw new OperationCanceledException($"Waiting for the commit of a batch at '{key.Darq}' was cancelled.", e, cancellationToken);
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
