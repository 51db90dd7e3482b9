namespace Dse.Samples.TravelReservation;

/// <summary>What one reservation service holds: every item with its capacity and holders, as its Inspect reported them.</summary>
public sealed record ServiceHoldings(string Service, IReadOnlyList<ItemHolding> Items);
