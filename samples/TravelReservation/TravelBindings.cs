using Dse.Grpc;
using Dse.Samples.TravelReservation.Wire;
using Grpc.Core;

namespace Dse.Samples.TravelReservation;

/// <summary>
/// The bind methods the services name with <see cref="BindServiceMethodAttribute"/>: the generated bindings, with request
/// bytes that do not parse answered INVALID_ARGUMENT (<see cref="DseRequestParsing"/>, docs/grpc.md).
/// </summary>
internal static class TravelBindings
{
    /// <summary>Binds <c>dse.samples.travel.v1.Reservation</c>; grpc-dotnet calls it with a null service and binds the handlers itself.</summary>
    public static void BindReservation(ServiceBinderBase binder, Reservation.ReservationBase? service) =>
        Reservation.BindService(DseRequestParsing.RefusingUnparseable(binder), service);
}
