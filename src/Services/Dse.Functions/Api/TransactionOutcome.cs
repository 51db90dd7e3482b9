namespace Dse.Functions;

/// <summary>Where in the protocol a transaction got its outcome (the phase trace's phases, in their order within an epoch).</summary>
public enum TransactionPhase
{
    /// <summary>Refused before it was sequenced (an unknown entity type, a key that does not deserialize): no TID, nothing ran.</summary>
    Rejected,

    /// <summary>Aborted by an exception in the lock-free phase; it read the epoch-start snapshot.</summary>
    OptimisticLogicAbort,

    /// <summary>Committed (or aborted by an exception) in the lock-free phase, in TID order among the epoch's lock-free commits.</summary>
    LockFree,

    /// <summary>Committed (or aborted by an exception) in the fallback phase, in TID order after the epoch's lock-free commits.</summary>
    Fallback,
}

/// <summary>
/// A transaction's outcome and its place in the serial order the runtime guarantees: epochs ascending; within an epoch
/// logic aborts, then lock-free commits by TID, then fallback commits by TID.
/// </summary>
/// <param name="RequestId">The id the client gave or was given for the request.</param>
/// <param name="Tid">The transaction's id (-1 when rejected).</param>
/// <param name="Epoch">The epoch it got its outcome in (a rescheduled transaction keeps its TID and ends in a later epoch; -1 when rejected).</param>
/// <param name="Phase">Where it got its outcome.</param>
/// <param name="Result">The serialized return value when committed (MemoryPack; empty for a method returning <see cref="Task"/>).</param>
/// <param name="Abort">Why it aborted; null when it committed.</param>
public sealed record TransactionOutcome(long RequestId, long Tid, long Epoch, TransactionPhase Phase, byte[] Result, EntityAbort? Abort)
{
    /// <summary>Whether the transaction committed.</summary>
    public bool Committed => Abort is null;

    /// <summary>The return value, deserialized; throws <see cref="EntityTransactionAbortedException"/> when the transaction aborted.</summary>
    /// <typeparam name="T">The method's return type (<see cref="Unit"/> for <see cref="Task"/>).</typeparam>
    /// <returns>The value.</returns>
    public T GetResult<T>() =>
        Abort is null ? Engine.WireFormat.Decode<T>(Result) : throw new EntityTransactionAbortedException(Abort);
}
