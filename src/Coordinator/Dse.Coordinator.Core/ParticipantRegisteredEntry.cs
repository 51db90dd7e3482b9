namespace Dse;

/// <summary>A participant id joined the cluster.</summary>
/// <param name="ObjectId">The participant.</param>
public sealed record ParticipantRegisteredEntry(long ObjectId) : ClusterJournalEntry;
