namespace Dse.Darq;

/// <summary>The outcome of an accepted step: where its entries went (a value, so a step allocates nothing for it).</summary>
/// <param name="SelfLsns">The log sequence numbers of the step's SELF messages, in the order given.</param>
/// <param name="OutLsns">The log sequence numbers of the step's OUT messages, in the order given.</param>
/// <param name="CompletionLsn">The address of the step's completion record, its last entry.</param>
/// <param name="DurableAt">The log address that must be committed for the step to be durable (see <see cref="Darq.WaitForCommitAsync(long, CancellationToken)"/>).</param>
public readonly record struct DarqStepResult(IReadOnlyList<long> SelfLsns, IReadOnlyList<long> OutLsns, long CompletionLsn, long DurableAt);
