namespace Dse.Darq;

/// <summary>The outcome of an enqueue.</summary>
/// <param name="Lsn">The new IN message's log sequence number, or -1 for a duplicate (nothing was appended).</param>
/// <param name="IsDuplicate">Whether the (producer, sequence) pair was already seen, so the message was acknowledged without a second entry.</param>
/// <param name="DurableAt">
/// The log address the DARQ must have committed for this acknowledgement to be durable; pass it to
/// <see cref="Darq.WaitForCommitAsync(long, CancellationToken)"/>. For a duplicate it covers the original message.
/// </param>
public readonly record struct DarqEnqueueResult(long Lsn, bool IsDuplicate, long DurableAt);
