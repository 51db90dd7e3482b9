namespace Dse.Samples.TravelReservation;

/// <summary>One reservation a trip asks for: the item it wants from a service.</summary>
public sealed record TripBooking(string Service, string Item);
