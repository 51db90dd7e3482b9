using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Darq.Grpc;

/// <summary>Automatic checkpoints of a remote processor, taken by the client after its own steps.</summary>
public sealed partial class RemoteDarqProcessor
{
    /// <summary>The automatic checkpoint policy; null when off.</summary>
    private AutoCheckpointPolicy? _autoCheckpoint;

    /// <summary>Steps through this processor since the last automatic checkpoint attempt.</summary>
    private long _stepsSinceCheckpoint;

    /// <summary>1 while an automatic checkpoint runs: steps that finish meanwhile do not start another.</summary>
    private int _autoCheckpointRunning;

    private DarqCheckpointResult? _lastAutoCheckpoint;

    private Exception? _lastAutoCheckpointError;

    /// <summary>The last automatic checkpoint that compacted something (its snapshot's LSNs); null before the first.</summary>
    public DarqCheckpointResult? LastAutoCheckpoint => Volatile.Read(ref _lastAutoCheckpoint);

    /// <summary>
    /// Why the last automatic checkpoint attempt failed (the snapshot function threw, the DARQ refused the checkpoint, or
    /// the call failed); null before any failure and again after the next attempt that succeeds.
    /// </summary>
    public Exception? LastAutoCheckpointError => Volatile.Read(ref _lastAutoCheckpointError);

    /// <summary>
    /// Turns on automatic checkpoints: after every <paramref name="everySteps"/>-th step through this processor; the same as
    /// <see cref="EnableAutoCheckpoint(DarqCheckpointPolicy, DarqSnapshot, ILogger?)"/> with only
    /// <see cref="DarqCheckpointPolicy.EverySteps"/> set.
    /// </summary>
    /// <param name="everySteps">How many steps between checkpoints, at least 1.</param>
    /// <param name="snapshot">Turns the unconsumed plain SELF messages into their replacement.</param>
    /// <param name="logger">Receives failed attempts (event 4120, warning) and due or deferred ones (4121, 4122, debug); none by default.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="everySteps"/> is below 1.</exception>
    public void EnableAutoCheckpoint(int everySteps, DarqSnapshot snapshot, ILogger? logger = null)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(everySteps, 1);
        EnableAutoCheckpoint(new DarqCheckpointPolicy { EverySteps = everySteps }, snapshot, logger);
    }

    /// <summary>
    /// Turns on automatic checkpoints, as <see cref="DarqProcessor.EnableAutoCheckpoint(DarqCheckpointPolicy, DarqSnapshot)"/>
    /// does for a co-located processor: after a step through this processor that reaches any threshold of
    /// <paramref name="policy"/>, <see cref="CheckpointAsync(DarqSnapshot, bool, CancellationToken)"/> with
    /// <paramref name="snapshot"/> runs before <see cref="StepAsync"/> returns. The SELF thresholds read this processor's
    /// table (<see cref="UnconsumedSelfCount"/>, <see cref="UnconsumedSelfBytes"/>), so checking them costs no call.
    /// Replaces an earlier policy.
    /// </summary>
    /// <param name="policy">The thresholds (validated here); it is immutable, so it may be shared.</param>
    /// <param name="snapshot">Turns the unconsumed plain SELF messages into their replacement; runs on the stepping thread.</param>
    /// <param name="logger">Receives failed attempts (event 4120, warning) and due or deferred ones (4121, 4122, debug); none by default.</param>
    /// <exception cref="ArgumentException">The policy sets no threshold, or one below 1 (the message names it); nothing changes.</exception>
    /// <remarks>
    /// <para>The step's result is returned whatever the checkpoint does. A failed automatic checkpoint (the snapshot function
    /// threw, the DARQ refused it, the call failed) changes nothing, is logged and kept in <see cref="LastAutoCheckpointError"/>,
    /// and is tried again after the next step that reaches a threshold: with <see cref="DarqCheckpointPolicy.EverySteps"/>,
    /// that many steps later; with a SELF threshold, which a failed checkpoint leaves reached, after the next step.</para>
    /// <para>Until the replay's SELF messages have been read from <see cref="ReadAllAsync"/> a snapshot would miss them, so
    /// a due checkpoint waits (event 4122) and is taken after the first step once they are read.</para>
    /// <para>The checkpoint is a call of its own after the step's: a step taken concurrently by another task is not in the
    /// snapshot (see <see cref="CheckpointAsync(DarqSnapshot, bool, CancellationToken)"/>). Steps that finish while an
    /// automatic checkpoint runs do not start another. Disposing the processor cancels a running one.</para>
    /// </remarks>
    public void EnableAutoCheckpoint(DarqCheckpointPolicy policy, DarqSnapshot snapshot, ILogger? logger = null)
    {
        ArgumentNullException.ThrowIfNull(policy);
        ArgumentNullException.ThrowIfNull(snapshot);
        policy.Validate();
        Interlocked.Exchange(ref _stepsSinceCheckpoint, 0);
        Volatile.Write(ref _autoCheckpoint, new AutoCheckpointPolicy(policy, snapshot, logger ?? NullLogger.Instance));
    }

    /// <summary>Turns automatic checkpoints off (one already running finishes).</summary>
    public void DisableAutoCheckpoint() => Volatile.Write(ref _autoCheckpoint, null);

    /// <summary>Counts a step this processor appended and takes the automatic checkpoint when it is due.</summary>
    private async Task CheckpointIfDueAsync(AutoCheckpointPolicy policy)
    {
        long since = Interlocked.Increment(ref _stepsSinceCheckpoint);
        string? reached;
        bool replayRead;
        int selfCount;
        long selfBytes;
        lock (_selfMessages)
        {
            selfCount = _selfMessages.Count;
            selfBytes = _selfBytes;
            replayRead = _selfReplayRead;
            reached = policy.Thresholds.Reached(since, selfCount, selfBytes);
        }

        if (reached is null)
        {
            return;
        }

        if (!replayRead)
        {
            // Counted steps stay counted: the first step after the replay's SELF messages are read takes it.
            DarqGrpcLogMessages.AutoCheckpointDeferred(policy.Logger, Darq, Incarnation, reached);
            return;
        }

        if (Interlocked.CompareExchange(ref _autoCheckpointRunning, 1, 0) != 0)
        {
            return;
        }

        try
        {
            Interlocked.Exchange(ref _stepsSinceCheckpoint, 0);
            DarqGrpcLogMessages.AutoCheckpointDue(policy.Logger, Darq, Incarnation, reached, selfCount, selfBytes);
            CancellationToken closing;
            try
            {
                closing = _closing.Token;
            }
            catch (ObjectDisposedException)
            {
                return;
            }

            try
            {
                // The processor's own token: the caller's step is appended, and its cancellation must not look like a failed step.
                var checkpoint = await CheckpointAsync(policy.Snapshot, waitDurable: false, closing).ConfigureAwait(false);
                if (checkpoint.CheckpointLsn >= 0)
                {
                    Volatile.Write(ref _lastAutoCheckpoint, checkpoint);
                }

                Volatile.Write(ref _lastAutoCheckpointError, null);
            }
            catch (OperationCanceledException) when (closing.IsCancellationRequested)
            {
                // Disposed meanwhile: nothing to report.
            }
#pragma warning disable CA1031 // The step succeeded; a failed automatic checkpoint is logged, kept and retried later, not reported as the step's failure.
            catch (Exception e)
#pragma warning restore CA1031
            {
                Volatile.Write(ref _lastAutoCheckpointError, e);
                DarqGrpcLogMessages.AutoCheckpointFailed(policy.Logger, e, Darq, Incarnation);
            }
        }
        finally
        {
            Volatile.Write(ref _autoCheckpointRunning, 0);
        }
    }

    private sealed record AutoCheckpointPolicy(DarqCheckpointPolicy Thresholds, DarqSnapshot Snapshot, ILogger Logger);
}
