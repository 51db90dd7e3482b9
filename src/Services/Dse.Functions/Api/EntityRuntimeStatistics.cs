namespace Dse.Functions;

/// <summary>What a runtime has done so far.</summary>
/// <param name="Epochs">Epochs completed.</param>
/// <param name="LockFreeCommits">Transactions committed in the lock-free phase.</param>
/// <param name="FallbackCommits">Transactions committed in a fallback phase.</param>
/// <param name="FallbackAborts">Transactions aborted by an exception in a fallback phase.</param>
/// <param name="LogicAborts">Transactions aborted by an exception in the lock-free phase.</param>
/// <param name="Rescheduled">Times a fallback transaction touched a key outside its first read/write set and moved to the next epoch.</param>
public sealed record EntityRuntimeStatistics(long Epochs, long LockFreeCommits, long FallbackCommits, long FallbackAborts, long LogicAborts, long Rescheduled);
