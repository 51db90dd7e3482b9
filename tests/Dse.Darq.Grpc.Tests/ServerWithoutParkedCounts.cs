using Dse.Darq.Grpc.V1;
using Grpc.Core;

namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// A server from before the per-destination pending count: <c>ListParkedDeliveries</c> lists one parked destination
/// ("b") without <c>ParkedDelivery.pending_out_count</c>; every other method answers UNIMPLEMENTED.
/// </summary>
internal sealed class ServerWithoutParkedCounts : DarqService.DarqServiceBase
{
    /// <summary>The whole-DARQ count it replies with.</summary>
    public const int PendingOutCount = 7;

    public override Task<ListParkedDeliveriesReply> ListParkedDeliveries(ListParkedDeliveriesRequest request, ServerCallContext context)
    {
        var reply = new ListParkedDeliveriesReply { PendingOutCount = PendingOutCount };
        reply.Parked.Add(new ParkedDelivery
        {
            Destination = "b",
            Lsn = 64,
            Reason = "refused",
            ParkedAt = Google.Protobuf.WellKnownTypes.Timestamp.FromDateTimeOffset(DateTimeOffset.UnixEpoch),
            Refusals = 1,
        });
        return Task.FromResult(reply);
    }
}
