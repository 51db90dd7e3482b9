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
