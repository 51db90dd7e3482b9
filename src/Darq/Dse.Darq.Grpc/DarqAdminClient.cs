using Dse.Darq.Grpc.V1;
using Grpc.Core;

namespace Dse.Darq.Grpc;

/// <summary>
/// The operator calls of a remote DARQ (docs/darq-grpc.md): list its parked deliveries, retry a parked destination, give
/// up a pending OUT message, retire a producer; the remote forms of <see cref="Darq.ParkedDeliveries"/>,
/// <see cref="Darq.RetryParkedDelivery"/>, <see cref="Darq.DiscardOutAsync"/> and <see cref="Darq.RetireProducerAsync"/>. The server answers them only when its application enabled them
/// (<see cref="DarqGrpcServiceOptions.EnableOperatorCalls"/>); otherwise every call throws an <see cref="RpcException"/>
/// with UNIMPLEMENTED, and one its <see cref="DarqGrpcServiceOptions.AuthorizeOperatorCall"/> refuses PERMISSION_DENIED.
/// </summary>
/// <remarks>
/// Other failures are <see cref="RpcException"/>s too: NOT_FOUND for a DARQ the server does not host, UNAVAILABLE when the
/// DARQ is closed or cannot commit. Nothing is resent by this client: after a <see cref="DiscardOutAsync"/> whose outcome
/// is unknown (UNAVAILABLE, a timeout), a second call returns <see langword="false"/> if the first one got through.
/// </remarks>
public sealed class DarqAdminClient
{
    private readonly DarqService.DarqServiceClient _client;

    /// <summary>Creates a client over a channel to the server hosting the DARQ.</summary>
    /// <param name="channel">The channel (for example a <c>GrpcChannel</c>); the caller owns it.</param>
    /// <param name="darq">The DARQ's name on that server.</param>
    public DarqAdminClient(ChannelBase channel, string darq)
        : this((channel ?? throw new ArgumentNullException(nameof(channel))).CreateCallInvoker(), darq)
    {
    }

    /// <summary>Creates a client over a call invoker (for example a channel with interceptors that add credentials).</summary>
    /// <param name="callInvoker">The call invoker; the caller owns its channel.</param>
    /// <param name="darq">The DARQ's name on that server.</param>
    public DarqAdminClient(CallInvoker callInvoker, string darq)
    {
        ArgumentNullException.ThrowIfNull(callInvoker);
        ArgumentException.ThrowIfNullOrEmpty(darq);
        _client = new DarqService.DarqServiceClient(callInvoker);
        Darq = darq;
    }

    /// <summary>The DARQ's name.</summary>
    public string Darq { get; }

    /// <summary>
    /// The destinations the DARQ parked (<see cref="Darq.ParkedDeliveries"/>), how many OUT messages each of them holds
    /// pending, and how many the DARQ has pending in all.
    /// </summary>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>
    /// The parked destinations (in no particular order), each one's <see cref="Darq.PendingOutCountAsync"/> and the DARQ's
    /// <see cref="Darq.PendingOutCount"/>.
    /// </returns>
    public async Task<DarqParkedDeliveries> ListParkedDeliveriesAsync(CancellationToken cancellationToken = default)
    {
        var reply = await _client.ListParkedDeliveriesAsync(new ListParkedDeliveriesRequest { Darq = Darq }, cancellationToken: cancellationToken)
            .ConfigureAwait(false);
        var parked = new DarqParkedDelivery[reply.Parked.Count];
        var pendingByDestination = new Dictionary<string, int>(reply.Parked.Count, StringComparer.Ordinal);
        for (int i = 0; i < parked.Length; i++)
        {
            var p = reply.Parked[i];
            parked[i] = new DarqParkedDelivery(p.Destination, p.Lsn, p.Reason, p.ParkedAt?.ToDateTimeOffset() ?? default, p.Refusals);

            // Absent from a server that predates the per-destination count: left out rather than reported as 0.
            if (p.HasPendingOutCount)
            {
                pendingByDestination[p.Destination] = p.PendingOutCount;
            }
        }

        return new DarqParkedDeliveries(parked, reply.PendingOutCount) { PendingOutCountByDestination = pendingByDestination };
    }

    /// <summary>Tries a parked destination again now (<see cref="Darq.RetryParkedDelivery"/>).</summary>
    /// <param name="destination">The destination's name.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>Whether it was parked; <see langword="false"/> (nothing changed) when it was not, or was retried already.</returns>
    /// <exception cref="ArgumentException"><paramref name="destination"/> is empty (nothing is sent).</exception>
    public async Task<bool> RetryParkedDeliveryAsync(string destination, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(destination);
        var reply = await _client.RetryParkedDeliveryAsync(new RetryParkedDeliveryRequest { Darq = Darq, Destination = destination },
            cancellationToken: cancellationToken).ConfigureAwait(false);
        return reply.Retried;
    }

    /// <summary>
    /// Gives up a pending OUT message for good (<see cref="Darq.DiscardOutAsync"/>): it is never delivered, and later messages
    /// to its destination go out. Returns once the discard is durable at the DARQ.
    /// </summary>
    /// <param name="outLsn">The OUT message's LSN (<see cref="DarqParkedDelivery.Lsn"/>, a step's <c>OutLsns</c>).</param>
    /// <param name="cancellationToken">Cancels the call (the discard may still happen).</param>
    /// <returns><see langword="true"/> when it was discarded; <see langword="false"/> when no OUT message is pending at that LSN (acknowledged, discarded, rolled back, or never one).</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="outLsn"/> is negative (nothing is sent).</exception>
    public async Task<bool> DiscardOutAsync(long outLsn, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(outLsn);
        try
        {
            await _client.DiscardOutAsync(new DiscardOutRequest { Darq = Darq, Lsn = outLsn }, cancellationToken: cancellationToken).ConfigureAwait(false);
            return true;
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.NotFound && e.Trailers.GetValue(DarqRpcErrors.ErrorKey) == DarqRpcErrors.NotPending)
        {
            return false;
        }
    }

    /// <summary>
    /// Removes a producer that will never send again from the DARQ's deduplication table (<see cref="Darq.RetireProducerAsync"/>),
    /// freeing its slot. Returns once that can no longer be lost (durable at the DARQ; under general speculation, once the
    /// coordinator committed the version that removed it).
    /// A message the producer sends afterwards is taken as new, a resend of an old one included.
    /// </summary>
    /// <param name="producerId">The producer id (a source DARQ's is <see cref="Darq.SourceProducerId"/>).</param>
    /// <param name="cancellationToken">Cancels the call (the retirement may still happen).</param>
    /// <returns>Whether the table held the producer, and how many producers it holds now.</returns>
    public async Task<(bool Retired, int ProducerCount)> RetireProducerAsync(long producerId, CancellationToken cancellationToken = default)
    {
        var reply = await _client.RetireProducerAsync(new RetireProducerRequest { Darq = Darq, ProducerId = producerId }, cancellationToken: cancellationToken)
            .ConfigureAwait(false);
        return (reply.Retired, reply.ProducerCount);
    }
}
