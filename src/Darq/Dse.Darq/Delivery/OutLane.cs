namespace Dse.Darq;

/// <summary>
/// One destination's delivery state. <see cref="Turn"/> is the task delivering its messages (null when none does);
/// <see cref="Failures"/> counts failed turns in a row, after which it waits <see cref="Delay"/> (doubling up to
/// <see cref="DarqOptions.DeliveryRetryMaxDelay"/>) until <see cref="RetryAt"/>. Guarded by the delivery loop's lock on its lanes.
/// </summary>
internal sealed class OutLane(string destination)
{
    public string Destination { get; } = destination;

    public Task? Turn { get; set; }

    public int Failures { get; set; }

    public TimeSpan Delay { get; set; }

    public DateTimeOffset RetryAt { get; set; }

    /// <summary>How many times the pending OUT messages had been rebuilt (restores) when the turn's messages were collected.</summary>
    public long CollectedAtRebuild { get; set; }
}
