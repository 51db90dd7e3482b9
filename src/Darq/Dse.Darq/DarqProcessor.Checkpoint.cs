namespace Dse.Darq;

/// <summary>Checkpoints taken by the processor under its incarnation.</summary>
public sealed partial class DarqProcessor
{
    /// <summary>The automatic checkpoint policy; null when off.</summary>
    private AutoCheckpointPolicy? _autoCheckpoint;

    /// <summary>Steps through this processor since the last automatic checkpoint attempt.</summary>
    private long _stepsSinceCheckpoint;

    private DarqCheckpointResult? _lastAutoCheckpoint;

    private Exception? _lastAutoCheckpointError;

    /// <summary>The last automatic checkpoint that compacted something (its snapshot's LSNs); null before the first.</summary>
    public DarqCheckpointResult? LastAutoCheckpoint => Volatile.Read(ref _lastAutoCheckpoint);

    /// <summary>
    /// Why the last automatic checkpoint attempt failed (also logged, event 4203); null before any failure and again after
    /// the next attempt that succeeds.
    /// </summary>
    public Exception? LastAutoCheckpointError => Volatile.Read(ref _lastAutoCheckpointError);

    /// <summary>
    /// Turns on automatic checkpoints: after every <paramref name="everySteps"/>-th step through this processor; the same
    /// as <see cref="EnableAutoCheckpoint(DarqCheckpointPolicy, DarqSnapshot)"/> with only
    /// <see cref="DarqCheckpointPolicy.EverySteps"/> set.
    /// </summary>
    /// <param name="everySteps">How many steps between checkpoints, at least 1.</param>
    /// <param name="snapshot">Turns the unconsumed plain SELF messages into their replacement.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="everySteps"/> is below 1.</exception>
    public void EnableAutoCheckpoint(int everySteps, DarqSnapshot snapshot)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(everySteps, 1);
        EnableAutoCheckpoint(new DarqCheckpointPolicy { EverySteps = everySteps }, snapshot);
    }

    /// <summary>
    /// Turns on automatic checkpoints: after a step through this processor (a batch counts as its number of steps, the
    /// checkpoint running after the batch) that reaches any threshold of <paramref name="policy"/>,
    /// <see cref="CheckpointAsync(DarqSnapshot, CancellationToken)"/> with <paramref name="snapshot"/> runs right after the
    /// step (serialized by the DARQ like any step). Suited to processors that keep their state as SELF deltas and never
    /// consume their own SELF messages in steps: the snapshot function sees every message it replaces, and
    /// <see cref="LastAutoCheckpoint"/> gives the replacement's LSNs. Replaces an earlier policy.
    /// </summary>
    /// <param name="policy">The thresholds (validated here); it is immutable, so it may be shared.</param>
    /// <param name="snapshot">Turns the unconsumed plain SELF messages into their replacement.</param>
    /// <exception cref="ArgumentException">The policy sets no threshold, or one below 1 (the message names it); nothing changes.</exception>
    /// <remarks>
    /// The step's result is returned whatever the checkpoint does: a failed automatic checkpoint (the snapshot function
    /// threw, or the processor was superseded) is logged (event 4203) and changes nothing. It is tried again after the
    /// next step that reaches a threshold: with <see cref="DarqCheckpointPolicy.EverySteps"/>, that many steps later;
    /// with a SELF threshold, which a failed checkpoint leaves reached, after the next step.
    /// </remarks>
    public void EnableAutoCheckpoint(DarqCheckpointPolicy policy, DarqSnapshot snapshot)
    {
        ArgumentNullException.ThrowIfNull(policy);
        ArgumentNullException.ThrowIfNull(snapshot);
        policy.Validate();
        Interlocked.Exchange(ref _stepsSinceCheckpoint, 0);
        Volatile.Write(ref _autoCheckpoint, new AutoCheckpointPolicy(policy, snapshot));
    }

    /// <summary>Turns automatic checkpoints off.</summary>
    public void DisableAutoCheckpoint() => Volatile.Write(ref _autoCheckpoint, null);

    private async ValueTask<DarqStepResult> StepThenCheckpointAsync(DarqStep step, AutoCheckpointPolicy policy, CancellationToken cancellationToken)
    {
        var result = await _darq.StepAsync(Incarnation, step, cancellationToken).ConfigureAwait(false);
        await CheckpointIfDueAsync(1, policy).ConfigureAwait(false);
        return result;
    }

    private async ValueTask<DarqConsumeResult> ConsumeThenCheckpointAsync(long lsn, AutoCheckpointPolicy policy, CancellationToken cancellationToken)
    {
        var result = await _darq.ConsumeAsync(Incarnation, lsn, cancellationToken).ConfigureAwait(false);
        await CheckpointIfDueAsync(1, policy).ConfigureAwait(false);
        return result;
    }

    private async ValueTask<IReadOnlyList<DarqStepResult>> StepBatchThenCheckpointAsync(IReadOnlyList<DarqStep> steps, AutoCheckpointPolicy policy,
        CancellationToken cancellationToken)
    {
        var results = await _darq.StepBatchAsync(Incarnation, steps, cancellationToken).ConfigureAwait(false);
        await CheckpointIfDueAsync(results.Count, policy).ConfigureAwait(false);
        return results;
    }

    /// <summary>Counts <paramref name="steps"/> appended steps and takes the automatic checkpoint when it is due.</summary>
    private async ValueTask CheckpointIfDueAsync(int steps, AutoCheckpointPolicy policy)
    {
        long since = Interlocked.Add(ref _stepsSinceCheckpoint, steps);
        if (policy.Thresholds.Reached(since, _darq.UnconsumedSelfCount, _darq.UnconsumedSelfBytes) is { } reached)
        {
            Interlocked.Exchange(ref _stepsSinceCheckpoint, 0);
            _darq.AutoCheckpointDue(Incarnation, reached);
            try
            {
                // Not cancellable: the step is appended, and the caller's cancellation must not look like a failed step.
                var checkpoint = await _darq.CheckpointAsync(Incarnation, policy.Snapshot, CancellationToken.None).ConfigureAwait(false);
                if (checkpoint.CheckpointLsn >= 0)
                {
                    Volatile.Write(ref _lastAutoCheckpoint, checkpoint);
                }

                Volatile.Write(ref _lastAutoCheckpointError, null);
            }
#pragma warning disable CA1031 // The step succeeded; a failed automatic checkpoint is logged and retried later, not reported as the step's failure.
            catch (Exception e)
#pragma warning restore CA1031
            {
                Volatile.Write(ref _lastAutoCheckpointError, e);
                _darq.AutoCheckpointFailed(e, Incarnation);
            }
        }
    }

    private sealed record AutoCheckpointPolicy(DarqCheckpointPolicy Thresholds, DarqSnapshot Snapshot);

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
