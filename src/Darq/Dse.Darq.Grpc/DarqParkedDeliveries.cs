namespace Dse.Darq.Grpc;

/// <summary>What <see cref="DarqAdminClient.ListParkedDeliveriesAsync"/> returns.</summary>
/// <param name="Parked">The parked destinations, each with its refused OUT message (<see cref="Darq.ParkedDeliveries"/>).</param>
/// <param name="PendingOutCount">The DARQ's OUT messages not yet acknowledged, to all destinations (<see cref="Darq.PendingOutCount"/>).</param>
public sealed record DarqParkedDeliveries(IReadOnlyList<DarqParkedDelivery> Parked, int PendingOutCount);
