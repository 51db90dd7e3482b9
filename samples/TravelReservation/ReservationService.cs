using Dse.Samples.TravelReservation.Wire;
using Grpc.Core;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// A reservation service (hotel, flight, ...) over its <see cref="ReservationStore"/>. Plain gRPC handlers: the DSE
/// server interceptor runs each synchronous segment as an action on the store, so a reply to a caller with a DSE
/// header (the frontend's saga) leaves at once, speculatively, and a reply to a caller without one waits at a barrier
/// until what it shows is recoverable. Bad input is INVALID_ARGUMENT naming what was wrong.
/// </summary>
[BindServiceMethod(typeof(TravelBindings), nameof(TravelBindings.BindReservation))]
internal sealed class ReservationService(ReservationStore store) : Reservation.ReservationBase
{
    /// <inheritdoc />
    public override async Task<ReserveReply> Reserve(ReserveRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        await store.Ready;
        var result = await RefusingBadInput(() => store.ReserveAsync(request.Item, request.Trip, context.CancellationToken), context);
        return new ReserveReply { Reserved = result.Reserved, Reason = result.Reason };
    }

    /// <inheritdoc />
    public override async Task<CancelReply> Cancel(CancelRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        await store.Ready;
        return new CancelReply { Released = await RefusingBadInput(() => store.CancelAsync(request.Item, request.Trip, context.CancellationToken), context) };
    }

    /// <inheritdoc />
    public override async Task<InspectReply> Inspect(InspectRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        await store.Ready;
        var reply = new InspectReply { Service = store.Service };
        foreach (var item in await store.InspectAsync(context.CancellationToken))
        {
            var state = new ItemState { Item = item.Item, Capacity = item.Capacity };
            state.Holders.AddRange(item.Holders);
            reply.Items.Add(state);
        }

        return reply;
    }

    private static async Task<T> RefusingBadInput<T>(Func<ValueTask<T>> operation, ServerCallContext context)
    {
        try
        {
            return await operation();
        }
        catch (ArgumentException ex)
        {
            throw new RpcException(new Status(StatusCode.InvalidArgument, $"{context.Method}: {ex.Message}"));
        }
    }
}
