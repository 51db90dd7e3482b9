namespace Dse;

/// <summary>A snapshot of what the coordinator tells participants: world-line, recent decisions and the boundary.</summary>
/// <param name="Epoch">Increases with every change; used to wait for the next change.</param>
/// <param name="WorldLine">The current world-line (0 before any failure).</param>
/// <param name="Decisions">Recent rollback decisions in world-line order.</param>
/// <param name="Committed">The recoverable boundary: per participant, the highest version that can never roll back.</param>
public sealed record ClusterState(long Epoch, long WorldLine, IReadOnlyList<RollbackDecision> Decisions, IReadOnlyDictionary<long, long> Committed)
{
    /// <summary>The state of a cluster that has seen nothing yet.</summary>
    public static ClusterState Empty { get; } = new(0, 0, [], new Dictionary<long, long>());

    /// <summary>
    /// The coordinator incarnation that published this state; it grows with every coordinator restart. A participant
    /// that sees a higher incarnation than it synchronized with resynchronizes (<see cref="IDseCoordinator.ResyncAsync"/>).
    /// </summary>
    public long Incarnation { get; init; }

    /// <summary>
    /// Whether the coordinator is recovering from its own restart: until every registered participant answered, the
    /// boundary stays at the floors participants reported and no decision is made.
    /// </summary>
    public bool IsRecovering { get; init; }

    /// <summary>
    /// Per participant, the highest version another participant's report depends on beyond what that participant
    /// reported. A participant that has not persisted that far persists up to it, so a dependency on a version it never
    /// reached (an idle sender's next number, or a number a forged header named) cannot hold the dependent forever.
    /// </summary>
    public IReadOnlyDictionary<long, long> Wanted { get; init; } = NoneWanted;

    /// <summary>An empty <see cref="Wanted"/> map, shared.</summary>
    public static IReadOnlyDictionary<long, long> NoneWanted { get; } = new Dictionary<long, long>();

    /// <summary>The committed (recoverable) version of <paramref name="objectId"/>, 0 if none.</summary>
    public long CommittedVersion(long objectId) => Committed.TryGetValue(objectId, out long v) ? v : 0;

    /// <summary>
    /// Whether every dependency, observed in world-line <paramref name="from"/>, survived each decision up to world-line
    /// <paramref name="to"/> (its version is within that decision's cut). False when a decision in between is no longer
    /// retained: survival cannot be shown then.
    /// </summary>
    /// <param name="dependencies">What was observed.</param>
    /// <param name="from">The world-line it was observed in.</param>
    /// <param name="to">The world-line to check up to.</param>
    /// <param name="self">
    /// If given, that StateObject's own versions are judged by what it did with each decision (it may have kept them
    /// above the cut) rather than by the cut alone.
    /// </param>
    public bool Survived(ReadOnlySpan<Dependency> dependencies, long from, long to, StateObject? self = null)
    {
        long expected = from + 1;
        foreach (var decision in Decisions)
        {
            if (decision.WorldLine < expected)
            {
                continue;
            }

            if (decision.WorldLine > to)
            {
                break;
            }

            if (decision.WorldLine > expected)
            {
                return false;
            }

            foreach (var d in dependencies)
            {
                bool survived = self is not null && d.ObjectId == self.Id
                    ? self.SurvivedOwnRollback(decision.WorldLine, d.Version) ?? decision.Survives(d)
                    : decision.Survives(d);
                if (!survived)
                {
                    return false;
                }
            }

            expected++;
        }

        return expected > to;
    }

    /// <summary>Whether <paramref name="dependency"/> lies inside the recoverable boundary.</summary>
    public bool IsCommitted(Dependency dependency) => dependency.Version <= CommittedVersion(dependency.ObjectId);
}
