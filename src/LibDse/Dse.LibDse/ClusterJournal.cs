namespace Dse;

/// <summary>
/// Where a <see cref="ClusterCoordinator"/> makes cluster changes durable before anyone sees them: membership, rollback
/// decisions and rollback acknowledgements. Nothing is journaled on the failure-free path once membership is settled.
/// </summary>
public interface IClusterJournal
{
    /// <summary>Appends one entry and completes once it is durable.</summary>
    /// <exception cref="Exception">Any failure leaves the outcome unknown; the coordinator then stops serving.</exception>
    ValueTask AppendAsync(ClusterJournalEntry entry, CancellationToken cancellationToken = default);
}

/// <summary>One durable cluster change.</summary>
public abstract record ClusterJournalEntry;

/// <summary>A coordinator incarnation started; incarnations grow by one with every start.</summary>
/// <param name="Incarnation">The incarnation number (1 for the first start on an empty journal).</param>
public sealed record CoordinatorStartedEntry(long Incarnation) : ClusterJournalEntry;

/// <summary>A participant id joined the cluster.</summary>
/// <param name="ObjectId">The participant.</param>
public sealed record ParticipantRegisteredEntry(long ObjectId) : ClusterJournalEntry;

/// <summary>A rollback decision (its world-line is the failure sequence number).</summary>
/// <param name="Decision">The decision.</param>
public sealed record RollbackDecidedEntry(RollbackDecision Decision) : ClusterJournalEntry;

/// <summary>A participant applied a decision and kept its versions up to <paramref name="KeptThrough"/>.</summary>
/// <param name="ObjectId">The participant.</param>
/// <param name="WorldLine">The decision's world-line.</param>
/// <param name="KeptThrough">The highest version it kept.</param>
public sealed record RollbackAcknowledgedEntry(long ObjectId, long WorldLine, long KeptThrough) : ClusterJournalEntry;
