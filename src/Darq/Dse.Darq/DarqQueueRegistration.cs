namespace Dse.Darq;

/// <summary>Reports a DARQ's depths through a LibDse participant's heartbeats.</summary>
public static class DarqQueueRegistration
{
    /// <summary>
    /// Registers <paramref name="darq"/>'s depths (unconsumed, spilled IN, pending OUT) with
    /// <paramref name="participant"/>, whose heartbeats then report them to the coordinator, so that its dashboard and
    /// <c>dse status</c> show them. A DARQ with <see cref="DarqSpeculationMode.General"/> reports through its own
    /// StateObject without this call; use it for a DARQ that runs beside a service's StateObject. Dispose the result
    /// before the DARQ, or the heartbeats report a closed DARQ's last depths.
    /// </summary>
    /// <param name="darq">The DARQ; its <see cref="Darq.Name"/> names the queue.</param>
    /// <param name="participant">A StateObject of the same process.</param>
    /// <exception cref="ArgumentException">The name is not a valid queue name (<see cref="StateObject.RegisterQueue"/>) or is registered already.</exception>
    public static IDisposable ReportDepthsThrough(this Darq darq, StateObject participant)
    {
        ArgumentNullException.ThrowIfNull(darq);
        ArgumentNullException.ThrowIfNull(participant);
        return participant.RegisterQueue(darq.Name, () => new QueueStatistics(darq.Name, darq.UnconsumedCount, darq.SpilledInCount, darq.PendingOutCount));
    }
}
