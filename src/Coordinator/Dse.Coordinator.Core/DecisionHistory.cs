namespace Dse;

/// <summary>
/// The rollback decisions a <see cref="ClusterCoordinator"/> retains, in world-line order, and the world-line they
/// reached; with them, the checks of whether reported or listed versions still belong to the current lineage. Guarded
/// by the coordinator's lock.
/// </summary>
/// <remarks>
/// Invariants: world-lines ascend; at most <c>maxRetained</c> decisions are kept (the oldest go first);
/// <see cref="WorldLine"/> is the world-line of the latest decision recorded, 0 before any.
/// </remarks>
internal sealed class DecisionHistory(int maxRetained)
{
    private readonly List<RollbackDecision> _decisions = [];

    // Per retained decision this incarnation made, what each participant had reported when it was made (for inspection).
    private readonly Dictionary<long, IReadOnlyDictionary<long, long>> _reportedBefore = [];

    /// <summary>The current world-line: the latest decision's, 0 before any.</summary>
    public long WorldLine { get; private set; }

    /// <summary>The retained decisions, oldest first.</summary>
    public IReadOnlyList<RollbackDecision> Retained => _decisions;

    /// <summary>A copy of the retained decisions, for a published state.</summary>
    public RollbackDecision[] Snapshot() => [.. _decisions];

    /// <summary>Makes <paramref name="decision"/> the current world-line's and drops the oldest beyond retention.</summary>
    /// <param name="decision">The decision.</param>
    /// <param name="reportedBefore">What each participant had reported when it was decided, if known.</param>
    public void Record(RollbackDecision decision, IReadOnlyDictionary<long, long>? reportedBefore = null)
    {
        WorldLine = decision.WorldLine;
        _decisions.Add(decision);
        if (reportedBefore is not null)
        {
            _reportedBefore[decision.WorldLine] = reportedBefore;
        }

        if (_decisions.Count > maxRetained)
        {
            _reportedBefore.Remove(_decisions[0].WorldLine);
            _decisions.RemoveAt(0);
        }
    }

    /// <summary>What each participant had reported when the retained decision of <paramref name="worldLine"/> was made, if known.</summary>
    public IReadOnlyDictionary<long, long>? ReportedBefore(long worldLine) => _reportedBefore.GetValueOrDefault(worldLine);

    /// <summary>Whether world-line <paramref name="worldLine"/> is older than the retained decisions can check.</summary>
    public bool BeyondRetention(long worldLine) => _decisions.Count > 0 && worldLine < _decisions[0].WorldLine - 1;

    /// <summary>The earliest retained decision after <paramref name="worldLine"/> that restarted or removed <paramref name="objectId"/>.</summary>
    public RollbackDecision? FailureOfAfter(long objectId, long worldLine)
    {
        foreach (var decision in _decisions)
        {
            if (decision.FailedObjectId == objectId && decision.WorldLine > worldLine)
            {
                return decision;
            }
        }

        return null;
    }

    /// <summary>
    /// The prefix of <paramref name="listed"/> above the committed version that the current lineage can still contain:
    /// it stops at the first version a later decision removed (by its own number, or because it observed a version of
    /// another participant above that decision's cut), because what follows a lost version in a lineage is lost too.
    /// </summary>
    public List<VersionReport> Surviving(long objectId, IReadOnlyList<VersionReport> listed, DependencyGraph graph)
    {
        long committed = graph.CommittedVersion(objectId);
        var result = new List<VersionReport>(listed.Count);
        foreach (var r in listed)
        {
            if (r.Version <= committed)
            {
                continue;
            }

            if (BeyondRetention(r.WorldLine) || graph.IsStale(objectId, r.Version, r.WorldLine, _decisions) || ObservedRemovedState(r))
            {
                break;
            }

            result.Add(r);
        }

        return result;
    }

    /// <summary>Whether a fragment of world-line w observed a version that a decision after w did not keep.</summary>
    private bool ObservedRemovedState(VersionReport report)
    {
        foreach (var decision in _decisions)
        {
            if (decision.WorldLine <= report.WorldLine)
            {
                continue;
            }

            foreach (var d in report.Dependencies)
            {
                // A participant the decision does not list joined later, so the fragment cannot have observed it before.
                if (decision.Cut.TryGetValue(d.ObjectId, out long cut) && d.Version > cut)
                {
                    return true;
                }
            }
        }

        return false;
    }
}
