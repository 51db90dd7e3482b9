namespace Dse.Samples.TravelReservation;

/// <summary>One item of a reservation service: how many trips it can hold, and the trips holding it in the order they reserved it.</summary>
public sealed record ItemHolding(string Item, int Capacity, IReadOnlyList<string> Holders);
