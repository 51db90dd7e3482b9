namespace Dse;

/// <summary>A rollback decision (its world-line is the failure sequence number).</summary>
/// <param name="Decision">The decision.</param>
public sealed record RollbackDecidedEntry(RollbackDecision Decision) : ClusterJournalEntry;
