namespace Dse;

/// <summary>
/// The coordinator's view of the dependency graph: per participant, the committed version and the reported but
/// uncommitted versions with their fragments. Computes the recoverable boundary and rollback cuts as the greatest
/// closure of persisted, prefix-closed version sets. Not thread-safe: the owning coordinator serializes access.
/// </summary>
/// <remarks>
/// <see cref="ComputeClosure"/> is the specification of the boundary. <see cref="AdvanceCommitted"/> does not run it on
/// the report path: <see cref="Add"/> maintains the closure incrementally (DependencyGraph.Incremental.cs), and only the
/// rare paths (a new participant, an out-of-order report, a replaced listing, a raised floor, a decision or truncation
/// that removed versions) make the next advance recompute it in full and rebuild the incremental state.
/// </remarks>
public sealed partial class DependencyGraph
{
    private readonly Dictionary<long, Participant> _participants = [];

    // Mirrors every Participant.Committed at its slot, for the snapshots.
    private readonly CommittedMap.Builder _committed = new();

    /// <summary>Registered participant ids.</summary>
    public IEnumerable<long> ParticipantIds => _participants.Keys;

    /// <summary>Whether <paramref name="objectId"/> is registered.</summary>
    public bool Contains(long objectId) => _participants.ContainsKey(objectId);

    /// <summary>Registers a participant with nothing reported yet.</summary>
    public void AddParticipant(long objectId)
    {
        if (_participants.ContainsKey(objectId))
        {
            return;
        }

        _participants.Add(objectId, new Participant(objectId, _committed.Add(objectId)));

        // Versions that already depend on this id dangle without a waiter entry (it was unknown): rebuild.
        if (_danglingOnUnregistered > 0)
        {
            Invalidate();
        }
    }

    /// <summary>The committed (recoverable) version of a participant.</summary>
    public long CommittedVersion(long objectId) => _participants.TryGetValue(objectId, out var p) ? p.Committed : 0;

    /// <summary>The highest version known persisted (committed or not).</summary>
    public long LatestVersion(long objectId) => _participants.TryGetValue(objectId, out var p) ? p.Latest : 0;

    /// <summary>Number of uncommitted versions held, over all participants.</summary>
    public int UncommittedCount
    {
        get
        {
            int n = 0;
            foreach (var p in _participants.Values)
            {
                n += p.Uncommitted.Count;
            }

            return n;
        }
    }

    /// <summary>
    /// The committed version of every participant: an immutable map that never changes afterwards. Snapshots share
    /// what did not change between them, so taking one after a commit costs a copy of a few dozen slots.
    /// </summary>
    public IReadOnlyDictionary<long, long> CommittedSnapshot() => _committed.Snapshot();

    /// <summary>
    /// Whether a report of <paramref name="version"/> persisted in <paramref name="worldLine"/> belongs to a lineage a
    /// later decision removed (it lies above that decision's cut and the participant did not keep it).
    /// </summary>
    public bool IsStale(long objectId, long version, long worldLine, IReadOnlyList<RollbackDecision> decisions)
    {
        ArgumentNullException.ThrowIfNull(decisions);
        if (!_participants.TryGetValue(objectId, out var p))
        {
            return false;
        }

        foreach (var d in decisions)
        {
            if (d.WorldLine <= worldLine)
            {
                continue;
            }

            long cut = d.Cut.TryGetValue(objectId, out long c) ? c : long.MaxValue;
            if (version <= cut)
            {
                continue;
            }

            long kept = p.KeptThrough.TryGetValue(d.WorldLine, out long k) ? k : cut;
            if (version > kept)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>Adds a reported version; reports at or below the committed version, or already present, are duplicates.</summary>
    public ReportOutcome Add(long objectId, VersionReport report)
    {
        ArgumentNullException.ThrowIfNull(report);
        if (!_participants.TryGetValue(objectId, out var p))
        {
            throw new DseCoordinatorException($"Participant {objectId} is not registered.");
        }

        if (report.Version <= p.Committed)
        {
            return ReportOutcome.Duplicate;
        }

        int index = p.IndexOf(report.Version);
        if (index >= 0)
        {
            return ReportOutcome.Duplicate;
        }

        var deps = new Dependency[report.Dependencies.Count];
        for (int i = 0; i < deps.Length; i++)
        {
            deps[i] = report.Dependencies[i];
        }

        var node = new Node(p, report.Version, report.WorldLine, deps);
        if (~index < p.Uncommitted.Count)
        {
            // Out of order: versions above it that others' dependencies resolved to may now resolve to it.
            p.Uncommitted.Insert(~index, node);
            Invalidate();
        }
        else if (_incremental)
        {
            AddIncremental(p, node);
        }
        else
        {
            p.Uncommitted.Add(node);
        }

        return ReportOutcome.Accepted;
    }

    /// <summary>Replaces a restarted participant's uncommitted versions with what its storage reports.</summary>
    public void ReplaceUncommitted(long objectId, IEnumerable<VersionReport> persisted)
    {
        ArgumentNullException.ThrowIfNull(persisted);
        var p = _participants[objectId];
        Invalidate();
        p.Uncommitted.Clear();
        foreach (var r in persisted)
        {
            Add(objectId, r);
        }
    }

    /// <summary>Records that a participant applied the decision of <paramref name="worldLine"/> keeping versions up to <paramref name="keptThrough"/>.</summary>
    public void Acknowledge(long objectId, long worldLine, long keptThrough)
    {
        if (!_participants.TryGetValue(objectId, out var p))
        {
            throw new DseCoordinatorException($"Participant {objectId} is not registered.");
        }

        p.KeptThrough[worldLine] = keptThrough;
    }

    /// <summary>What a participant acknowledged keeping through the decision of <paramref name="worldLine"/>, if known.</summary>
    public long? KeptThrough(long objectId, long worldLine) =>
        _participants.TryGetValue(objectId, out var p) && p.KeptThrough.TryGetValue(worldLine, out long k) ? k : null;

    /// <summary>
    /// Raises a participant's committed version to a floor known from elsewhere (a boundary an earlier coordinator
    /// incarnation published) and drops the uncommitted versions at or below it.
    /// </summary>
    public void RaiseCommitted(long objectId, long floor)
    {
        if (_participants.TryGetValue(objectId, out var p) && floor > p.Committed)
        {
            Invalidate();
            Commit(p, floor);
        }
    }

    /// <summary>
    /// The greatest closure: per participant, the highest version v such that all its versions up to v are persisted
    /// and every dependency of them is inside the closure too. Dependencies on unknown or unreported versions dangle.
    /// </summary>
    /// <param name="overrides">Caps on a participant's candidate (a restarted participant's surviving storage).</param>
    /// <param name="checkLineage">
    /// Also require that the version a dependency resolves to was persisted in the dependent's world-line or earlier: a
    /// version number reused after a restart (a higher label) is not the state that was observed. Needed when
    /// fragments from before unknown decisions meet (a cold start); conservative otherwise.
    /// </param>
    public Dictionary<long, long> ComputeClosure(IReadOnlyDictionary<long, long>? overrides = null, bool checkLineage = false)
    {
        var c = new Dictionary<long, long>(_participants.Count);
        foreach (var p in _participants.Values)
        {
            long candidate = p.Latest;
            if (overrides is not null && overrides.TryGetValue(p.Id, out long cap) && cap < candidate)
            {
                candidate = Math.Max(cap, p.Committed);
            }

            c[p.Id] = candidate;
        }

        // Candidates only ever decrease, so the fixpoint iteration terminates.
        bool changed = true;
        while (changed)
        {
            changed = false;
            foreach (var p in _participants.Values)
            {
                long limit = c[p.Id];
                for (int i = 0; i < p.Uncommitted.Count && p.Uncommitted[i].Version <= limit; i++)
                {
                    if (!AllInside(p.Id, p.Uncommitted[i], c, checkLineage ? _participants : null))
                    {
                        c[p.Id] = i == 0 ? p.Committed : p.Uncommitted[i - 1].Version;
                        changed = true;
                        break;
                    }
                }
            }
        }

        return c;
    }

    /// <summary>
    /// Advances every participant's committed version to the current closure; returns whether anything moved. Commits
    /// what <see cref="Add"/> found closed since the last advance, or recomputes the closure in full after a rare path.
    /// </summary>
    public bool AdvanceCommitted()
    {
        if (_incremental)
        {
            return CommitClosed();
        }

        var closure = ComputeClosure();
        bool moved = false;
        foreach (var p in _participants.Values)
        {
            long target = closure[p.Id];
            if (target > p.Committed)
            {
                Commit(p, target);
                moved = true;
            }
        }

        Rebuild();
        return moved;
    }

    /// <summary>Drops every uncommitted version above each participant's cut (a cold start's restore points).</summary>
    public void TruncateAbove(IReadOnlyDictionary<long, long> cut)
    {
        ArgumentNullException.ThrowIfNull(cut);
        foreach (var p in _participants.Values)
        {
            if (cut.TryGetValue(p.Id, out long c) && p.Latest > c)
            {
                Invalidate();
                p.Uncommitted.RemoveAll(n => n.Version > c);
            }
        }
    }

    /// <summary>Applies a decision to the view: drops every uncommitted version above each participant's cut.</summary>
    public void Apply(RollbackDecision decision)
    {
        ArgumentNullException.ThrowIfNull(decision);
        foreach (var p in _participants.Values)
        {
            long cut = decision.CutFor(p.Id);
            if (cut < p.Committed)
            {
                throw new InvalidOperationException($"Decision {decision.WorldLine} would roll participant {p.Id} back below its committed version {p.Committed}.");
            }

            if (p.Latest > cut)
            {
                Invalidate();
                p.Uncommitted.RemoveAll(n => n.Version > cut);
            }
        }
    }

    /// <summary>Raises <paramref name="p"/>'s committed version and drops its versions at or below it.</summary>
    private void Commit(Participant p, long version)
    {
        p.Commit(version);
        _committed.Set(p.Slot, version);
    }

    private static bool AllInside(long self, Node node, Dictionary<long, long> c, Dictionary<long, Participant>? lineage)
    {
        foreach (var d in node.Dependencies)
        {
            if (d.ObjectId == self)
            {
                continue;
            }

            long limit = c.TryGetValue(d.ObjectId, out long v) ? v : 0;
            if (d.Version > limit)
            {
                return false;
            }

            if (lineage is not null && lineage.TryGetValue(d.ObjectId, out var target))
            {
                // The first version at or above the one observed must come from the observer's world-line or before,
                // unless the observed version lies below everything the target still lists: then it was pruned, which
                // the old coordinator only allowed once it was committed, and a later label there says nothing.
                int index = target.IndexOf(d.Version);
                int first = index >= 0 ? index : ~index;
                bool pruned = first == 0 && index < 0;
                if (!pruned && first < target.Uncommitted.Count && target.Uncommitted[first].WorldLine > node.WorldLine)
                {
                    return false;
                }
            }
        }

        return true;
    }

    /// <summary>A reported, uncommitted version: its fragment and, while the incremental state is valid, its place in it.</summary>
    private sealed class Node(Participant owner, long version, long worldLine, Dependency[] dependencies)
    {
        public Participant Owner { get; } = owner;

        public long Version { get; } = version;

        public long WorldLine { get; } = worldLine;

        public Dependency[] Dependencies { get; } = dependencies;

        // Incremental state (DependencyGraph.Incremental.cs); meaningless while _incremental is false.

        // In the greatest closure: committable (awaiting AdvanceCommitted) or committed. Invariant: a node that is not
        // closed reaches a dangling dependency; a closed node's dependencies all resolve to closed nodes.
        public bool Closed;

        // Dependencies not resolved yet: on a version its owner has not reported, or on an unregistered participant.
        public int Dangling;

        // Neighbours in the owner's chain of uncommitted versions (the chain orders a participant's own versions).
        public Node? Prev;
        public Node? Next;

        // Resolved dependencies on versions that were not closed when resolved, and the reverse edges.
        public Node[]? Out;
        public int OutCount;
        public Node[]? In;
        public int InCount;

        // Generation stamps of the searches: visited, and found blocked.
        public int Mark;
        public int BlockedMark;
    }

    /// <summary>One participant's committed version, its uncommitted chain and what it acknowledged keeping.</summary>
    private sealed class Participant(long id, int slot)
    {
        public long Id { get; } = id;

        // Position in registration order: the index of its committed version in the snapshots.
        public int Slot { get; } = slot;

        public long Committed { get; private set; }

        // Sorted by version; every entry is above Committed. With the incremental state valid, the first ClosedCount
        // entries are closed and the rest are not.
        public List<Node> Uncommitted { get; } = [];

        public int ClosedCount;

        // Whether it is in _dirty (it has closed versions that AdvanceCommitted has not committed yet).
        public bool Dirty;

        // Other participants' versions whose dependency on a version of this one above Latest is unresolved, keyed by
        // the version depended on.
        public PriorityQueue<Node, long> Waiters { get; } = new();

        public Dictionary<long, long> KeptThrough { get; } = [];

        public long Latest => Uncommitted.Count > 0 ? Uncommitted[^1].Version : Committed;

        public int IndexOf(long version)
        {
            int lo = 0, hi = Uncommitted.Count - 1;
            while (lo <= hi)
            {
                int mid = (lo + hi) >>> 1;
                long v = Uncommitted[mid].Version;
                if (v == version)
                {
                    return mid;
                }

                if (v < version)
                {
                    lo = mid + 1;
                }
                else
                {
                    hi = mid - 1;
                }
            }

            return ~lo;
        }

        public void Commit(long version)
        {
            Committed = version;
            int n = 0;
            while (n < Uncommitted.Count && Uncommitted[n].Version <= version)
            {
                n++;
            }

            Uncommitted.RemoveRange(0, n);
        }
    }
}
