namespace Dse.Darq;

/// <summary>
/// A deduplicated enqueue skipped sequence numbers of its producer while <see cref="DarqOptions.ContiguousProducerSequences"/>
/// is on: the DARQ expects <see cref="ExpectedSequenceNumber"/> from that producer next. Nothing was appended.
/// </summary>
/// <remarks>
/// A gap means that enqueues of the producer never arrived or were rolled back (under general speculation, a rollback voids
/// the enqueues that were not yet recoverable, and a restart of the DARQ loses those not yet persisted). The producer resends
/// from <see cref="ExpectedSequenceNumber"/> on, in order; the refused message goes after them.
/// </remarks>
public sealed class DarqSequenceGapException : InvalidOperationException
{
    /// <summary>Creates the exception.</summary>
    /// <param name="darqName">The DARQ's name.</param>
    /// <param name="producerId">The producer whose enqueue was refused.</param>
    /// <param name="sequenceNumber">The refused enqueue's sequence number.</param>
    /// <param name="expectedSequenceNumber">The sequence number the DARQ takes from this producer next.</param>
    public DarqSequenceGapException(string darqName, long producerId, long sequenceNumber, long expectedSequenceNumber)
        : base($"DARQ '{darqName}' refused sequence number {sequenceNumber} of producer {producerId}: it takes {expectedSequenceNumber} next " +
            $"(DarqOptions.ContiguousProducerSequences), so sequence numbers {expectedSequenceNumber} to {sequenceNumber - 1} never arrived or were rolled back. " +
            $"Nothing was appended; resend from {expectedSequenceNumber}.")
    {
        DarqName = darqName;
        ProducerId = producerId;
        SequenceNumber = sequenceNumber;
        ExpectedSequenceNumber = expectedSequenceNumber;
    }

    /// <summary>The DARQ's name.</summary>
    public string DarqName { get; }

    /// <summary>The producer whose enqueue was refused.</summary>
    public long ProducerId { get; }

    /// <summary>The refused enqueue's sequence number.</summary>
    public long SequenceNumber { get; }

    /// <summary>The sequence number the DARQ takes from this producer next: one above the largest it holds, or 0 for a producer it does not know.</summary>
    public long ExpectedSequenceNumber { get; }
}
