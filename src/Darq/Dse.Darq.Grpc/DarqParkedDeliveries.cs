namespace Dse.Darq.Grpc;

/// <summary>What <see cref="DarqAdminClient.ListParkedDeliveriesAsync"/> returns.</summary>
/// <param name="Parked">The parked destinations, each with its refused OUT message (<see cref="Darq.ParkedDeliveries"/>).</param>
/// <param name="PendingOutCount">The DARQ's OUT messages not yet acknowledged, to all destinations (<see cref="Darq.PendingOutCount"/>).</param>
public sealed record DarqParkedDeliveries(IReadOnlyList<DarqParkedDelivery> Parked, int PendingOutCount)
{
    /// <summary>
    /// Each parked destination's OUT messages not yet acknowledged, by destination name: its refused message and every later
    /// one held behind it (<see cref="Darq.PendingOutCountAsync"/>). A server that predates the count leaves it empty.
    /// </summary>
    public IReadOnlyDictionary<string, int> PendingOutCountByDestination { get; init; } = new Dictionary<string, int>(StringComparer.Ordinal);
}
