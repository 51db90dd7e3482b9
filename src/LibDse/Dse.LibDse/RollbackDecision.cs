namespace Dse;

/// <summary>
/// A rollback decided by the coordinator after a failure: the new world-line (failure sequence number) and, for every
/// participant, the highest version that survives. Persisted by the coordinator before anyone sees it.
/// </summary>
public sealed class RollbackDecision
{
    private readonly Dictionary<long, long> _cut;

    /// <summary>The <see cref="FailedObjectId"/> of a cold start's decision, which no single failure caused.</summary>
    public const long ColdStart = -1;

    /// <summary>Creates a decision.</summary>
    public RollbackDecision(long worldLine, long failedObjectId, IReadOnlyDictionary<long, long> cut, RollbackReason reason = RollbackReason.Restart)
    {
        ArgumentNullException.ThrowIfNull(cut);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(worldLine);
        WorldLine = worldLine;
        FailedObjectId = failedObjectId;
        Reason = failedObjectId == ColdStart ? RollbackReason.ColdStart : reason;
        _cut = new Dictionary<long, long>(cut);
    }

    /// <summary>The world-line the cluster moves to; decisions are applied in this order.</summary>
    public long WorldLine { get; }

    /// <summary>The participant whose restart caused the rollback, or <see cref="ColdStart"/>.</summary>
    public long FailedObjectId { get; }

    /// <summary>What caused the decision.</summary>
    public RollbackReason Reason { get; }

    /// <summary>For each participant known when deciding, the highest surviving version (0: nothing survives).</summary>
    public IReadOnlyDictionary<long, long> Cut => _cut;

    /// <summary>The highest surviving version of <paramref name="objectId"/>; objects unknown to the decision keep nothing.</summary>
    public long CutFor(long objectId) => _cut.TryGetValue(objectId, out long v) ? v : 0;

    /// <summary>Whether state that observed <paramref name="dependency"/> survives this decision.</summary>
    public bool Survives(Dependency dependency) => dependency.Version <= CutFor(dependency.ObjectId);

    /// <inheritdoc />
    public override string ToString() => $"RollbackDecision(world-line {WorldLine}, {Reason} of {FailedObjectId}, cut [{string.Join(", ", _cut.OrderBy(kv => kv.Key).Select(kv => $"{kv.Key}:{kv.Value}"))}])";
}
