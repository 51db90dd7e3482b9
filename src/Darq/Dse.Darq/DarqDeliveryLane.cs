namespace Dse.Darq;

/// <summary>A destination the delivery loop is working on (<see cref="Darq.DeliveryLanes"/>).</summary>
/// <param name="Destination">The destination's name.</param>
/// <param name="Delivering">Whether messages are being sent to it now.</param>
/// <param name="Failures">Failed attempts in a row (0 after a success); its lane backs off after each.</param>
/// <param name="RetryAt">When it is tried again after failed attempts; null when it has not failed.</param>
public sealed record DarqDeliveryLane(string Destination, bool Delivering, int Failures, DateTimeOffset? RetryAt);
