namespace Dse.Darq;

/// <summary>The outcome of a checkpoint: what it replaced and where the replacing SELF messages went.</summary>
/// <param name="ReplacedLsns">The SELF messages the checkpoint consumed, in LSN order (empty when there was nothing to compact).</param>
/// <param name="SelfLsns">The LSNs of the snapshot's SELF messages, in the order the snapshot gave them.</param>
/// <param name="CheckpointLsn">The address of the checkpoint record, the checkpoint's last entry; -1 when nothing was appended.</param>
/// <param name="DurableAt">The log address that must be committed for the checkpoint to be durable (see <see cref="Darq.WaitForCommitAsync(long, CancellationToken)"/>).</param>
public sealed record DarqCheckpointResult(IReadOnlyList<long> ReplacedLsns, IReadOnlyList<long> SelfLsns, long CheckpointLsn, long DurableAt);
