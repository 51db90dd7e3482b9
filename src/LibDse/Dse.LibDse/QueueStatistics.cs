namespace Dse;

/// <summary>The depths of one queue a participant reports (a DARQ's, for instance), at the moment it was read.</summary>
/// <param name="Name">The queue's name, unique per participant: 1 to <see cref="ParticipantStatistics.MaxQueueNameLength"/> characters, no control characters.</param>
/// <param name="Unconsumed">Messages received and not yet consumed (a DARQ's IN and SELF messages).</param>
/// <param name="InSpilled">Of those, messages held in the log only, beyond the in-memory budget.</param>
/// <param name="OutPending">Messages sent and not yet acknowledged by their destinations.</param>
public sealed record QueueStatistics(string Name, long Unconsumed, long InSpilled, long OutPending);
