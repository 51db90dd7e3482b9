namespace Dse.Darq;

/// <summary>
/// A destination refused an OUT message for good: it will never accept this message as it is (it hosts no DARQ of
/// that name, the payload is larger than it takes, it is configured to refuse the way it was sent). A destination throws
/// it from <see cref="IDarqDestination.DeliverAsync"/> or <see cref="IDarqDestination.DeliverSpeculativeAsync"/>; the
/// source then parks the message instead of retrying it at once (see <see cref="Darq.ParkedDeliveries"/>). Any other
/// exception is a transient failure, retried with backoff.
/// </summary>
public sealed class DarqDeliveryRefusedException : InvalidOperationException
{
    /// <summary>Creates the exception.</summary>
    /// <param name="destination">The destination's name.</param>
    /// <param name="reason">Why the destination refuses the message, for operators.</param>
    /// <param name="innerException">The error that carried the refusal, if any.</param>
    public DarqDeliveryRefusedException(string destination, string reason, Exception? innerException = null)
        : base($"Destination '{destination}' refuses the message: {reason}", innerException)
    {
        Destination = destination;
        Reason = reason;
    }

    /// <summary>The destination's name.</summary>
    public string Destination { get; }

    /// <summary>Why the destination refuses the message.</summary>
    public string Reason { get; }
}
