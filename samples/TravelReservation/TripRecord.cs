namespace Dse.Samples.TravelReservation;

/// <summary>
/// What is known of one trip after a run: what it asked to book, what its client was told, and what the frontend
/// records for it.
/// </summary>
/// <param name="Trip">The trip's id (its workflow's id).</param>
/// <param name="Bookings">The reservations it asked for, in booking order.</param>
/// <param name="Told">The outcome the client was told, or <c>null</c> when the client never got an answer.</param>
/// <param name="KnownToFrontend">Whether the frontend knows the trip.</param>
/// <param name="Outcomes">The outcomes the frontend records for the trip: one for a finished trip, none for one still running.</param>
public sealed record TripRecord(string Trip, IReadOnlyList<TripBooking> Bookings, string? Told, bool KnownToFrontend, IReadOnlyList<string> Outcomes)
{
    /// <summary>The outcome of a trip that holds every item it asked for.</summary>
    public const string Confirmed = "confirmed";

    /// <summary>The start of the outcome of a trip that holds nothing: <c>failed: SERVICE REASON</c>.</summary>
    public const string FailedPrefix = "failed";
}
