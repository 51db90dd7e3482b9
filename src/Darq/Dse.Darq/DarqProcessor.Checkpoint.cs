namespace Dse.Darq;

/// <summary>Checkpoints taken by the processor under its incarnation.</summary>
public sealed partial class DarqProcessor
{
    /// <summary>
    /// Compacts every unconsumed plain SELF message (activities are left alone) through <paramref name="snapshot"/>,
    /// atomically, under this processor's incarnation; see <see cref="Darq.CheckpointAsync(long, DarqSnapshot, CancellationToken)"/>.
    /// </summary>
    /// <param name="snapshot">Turns the SELF messages into their replacement (e.g. the processor's state as one message).</param>
    /// <param name="cancellationToken">Cancels waiting for earlier steps; an appended checkpoint is not undone.</param>
    /// <returns>The replaced LSNs and the LSNs of the snapshot's SELF messages (which replace them in this processor's bookkeeping).</returns>
    /// <remarks>
    /// Take it after the replay has been read: replayed SELF messages still in <see cref="Messages"/> may have been replaced.
    /// A step running at the same time that consumes a replaced SELF message is refused (it was consumed by the checkpoint).
    /// </remarks>
    public ValueTask<DarqCheckpointResult> CheckpointAsync(DarqSnapshot snapshot, CancellationToken cancellationToken = default)
        => _darq.CheckpointAsync(Incarnation, snapshot, cancellationToken);

    /// <summary>
    /// Replaces the named SELF messages by <paramref name="snapshot"/>, atomically, under this processor's incarnation; see
    /// <see cref="Darq.CheckpointAsync(long, IReadOnlyList{long}, IReadOnlyList{ReadOnlyMemory{byte}}, CancellationToken)"/>.
    /// </summary>
    /// <param name="replace">The SELF messages to replace.</param>
    /// <param name="snapshot">The replacing SELF payloads.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier steps; an appended checkpoint is not undone.</param>
    /// <returns>The replaced LSNs and the LSNs of the snapshot's SELF messages.</returns>
    public ValueTask<DarqCheckpointResult> CheckpointAsync(IReadOnlyList<long> replace, IReadOnlyList<ReadOnlyMemory<byte>> snapshot,
        CancellationToken cancellationToken = default)
        => _darq.CheckpointAsync(Incarnation, replace, snapshot, cancellationToken);
}
