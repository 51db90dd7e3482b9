namespace Dse.Darq;

/// <summary>
/// Internal control flow: a producer change found no room under the gate, before anything was appended. The action
/// ends and waits for <see cref="RoomFreed"/> (taken under the gate, so a prune after the check is not missed).
/// </summary>
#pragma warning disable CA1032, CA1064 // Never leaves the DARQ: the action that ran into it catches it.
internal sealed class SpeculationRoomException(Task roomFreed)
    : Exception("The speculation section has no room for this producer change until the coordinator commits.")
#pragma warning restore CA1032, CA1064
{
    public Task RoomFreed { get; } = roomFreed;
}
