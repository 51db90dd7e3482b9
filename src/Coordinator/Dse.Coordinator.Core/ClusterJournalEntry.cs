namespace Dse;

/// <summary>One durable cluster change.</summary>
public abstract record ClusterJournalEntry;
