namespace Dse.Darq;

/// <summary>
/// A destination whose oldest pending OUT message was refused for good (<see cref="DarqDeliveryRefusedException"/>): the
/// source sends it nothing until <see cref="Darq.RetryParkedDelivery"/>, the next
/// automatic retry (<see cref="DarqOptions.ParkedDeliveryRetryInterval"/>) or a reopen, because a later message must never
/// overtake an earlier one to the same destination. The message stays pending: nothing is lost, and
/// <see cref="Darq.DiscardOutAsync"/> gives it up explicitly.
/// </summary>
/// <param name="Destination">The destination's name.</param>
/// <param name="Lsn">The refused OUT message's LSN (the oldest pending one to that destination).</param>
/// <param name="Reason">Why it was refused.</param>
/// <param name="ParkedAt">When it was first parked (the source's <see cref="DarqOptions.TimeProvider"/>).</param>
/// <param name="Refusals">How many attempts were refused for good since then.</param>
public sealed record DarqParkedDelivery(string Destination, long Lsn, string Reason, DateTimeOffset ParkedAt, int Refusals);
