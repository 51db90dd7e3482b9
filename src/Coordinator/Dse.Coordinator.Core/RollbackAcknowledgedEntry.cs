namespace Dse;

/// <summary>A participant applied a decision and kept its versions up to <paramref name="KeptThrough"/>.</summary>
/// <param name="ObjectId">The participant.</param>
/// <param name="WorldLine">The decision's world-line.</param>
/// <param name="KeptThrough">The highest version it kept.</param>
public sealed record RollbackAcknowledgedEntry(long ObjectId, long WorldLine, long KeptThrough) : ClusterJournalEntry;
