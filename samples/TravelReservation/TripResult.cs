namespace Dse.Samples.TravelReservation;

/// <summary>One trip the launcher sent: what it asked for, what it was told, and how long the answer took.</summary>
/// <param name="Trip">The trip's id.</param>
/// <param name="Input">What it booked.</param>
/// <param name="Outcome">The outcome the frontend answered, or <c>null</c> when it never answered (the launcher gave up).</param>
/// <param name="LatencyMs">From the first attempt to the answer, retries included.</param>
/// <param name="Attempts">Calls made (more than one when a crash or rollback failed a call).</param>
public sealed record TripResult(string Trip, TripInput Input, string? Outcome, double LatencyMs, int Attempts);
