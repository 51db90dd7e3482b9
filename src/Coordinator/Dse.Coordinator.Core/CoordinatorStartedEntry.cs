namespace Dse;

/// <summary>A coordinator incarnation started; incarnations grow by one with every start.</summary>
/// <param name="Incarnation">The incarnation number (1 for the first start on an empty journal).</param>
public sealed record CoordinatorStartedEntry(long Incarnation) : ClusterJournalEntry;
