namespace Dse.Samples.TravelReservation;

/// <summary>
/// The trip workflow's input: the item to reserve from each service it books, in booking order; a trip of N services
/// books the first N of <see cref="TravelServices.Names"/>.
/// </summary>
public sealed record TripInput(IReadOnlyList<string> Items)
{
    /// <summary>The reservations this input asks for, in booking order.</summary>
    public IReadOnlyList<TripBooking> Bookings()
    {
        var bookings = new TripBooking[Items.Count];
        for (int i = 0; i < bookings.Length; i++)
        {
            bookings[i] = new TripBooking(TravelServices.Names[i], Items[i]);
        }

        return bookings;
    }
}
