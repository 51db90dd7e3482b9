using System.Diagnostics;

namespace Dse;

/// <summary>
/// The coordinator's view of the dependency graph: per participant, the committed version and the reported but
/// uncommitted versions with their fragments. Computes the recoverable boundary and rollback cuts as the greatest
/// closure of persisted, prefix-closed version sets. Not thread-safe: the owning coordinator serializes access.
/// </summary>
/// <remarks>
/// <see cref="ComputeClosure"/> is the specification of the boundary. <see cref="AdvanceCommitted"/> does not run it on
/// the report path: <see cref="Add"/> maintains the closure incrementally (<see cref="IncrementalClosure"/>), and only
/// the rare paths (a new participant, an out-of-order report, a replaced listing, a raised floor, a decision or
/// truncation that removed versions) make the next advance recompute it in full and rebuild the incremental state.
/// </remarks>
public sealed class DependencyGraph
{
    private readonly Dictionary<long, GraphParticipant> _participants = [];

    // Mirrors every GraphParticipant.Committed at its slot, for the snapshots.
    private readonly CommittedMap.Builder _committed = new();

    // Per participant, the highest version a report depends on above that participant's Latest (see WantedSnapshot);
    // the snapshot is rebuilt only after a change.
    private readonly Dictionary<long, long> _wanted = [];
    private IReadOnlyDictionary<long, long>? _wantedSnapshot;

    // The closure between full recomputations; it reads _participants and commits through Commit.
    private readonly IncrementalClosure _closure;

    /// <summary>Creates a graph with no participants.</summary>
    public DependencyGraph()
    {
        _closure = new IncrementalClosure(_participants, Commit);
    }

    /// <summary>Full recomputations since creation: the rare paths, not reports in order (diagnostics and tests).</summary>
    internal int FullRecomputeCount => _closure.FullRecomputeCount;

    /// <summary>Nodes the searches of reports visited since creation: their cost (tests bound it).</summary>
    internal long SearchedNodes => _closure.SearchedNodes;

    /// <summary>Whether the next advance is incremental (no rare path since the last full recomputation).</summary>
    internal bool IsIncremental => _closure.IsValid;

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

        _participants.Add(objectId, new GraphParticipant(objectId, _committed.Add(objectId)));
        _closure.OnParticipantAdded();
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

        NoteWanted(p, deps);
        var node = new GraphNode(p, report.Version, report.WorldLine, deps);
        if (~index < p.Uncommitted.Count)
        {
            // Out of order: versions above it that others' dependencies resolved to may now resolve to it.
            p.Uncommitted.Insert(~index, node);
            _closure.Invalidate();
        }
        else if (_closure.IsValid)
        {
            _closure.Append(p, node);
        }
        else
        {
            p.Uncommitted.Add(node);
        }

        ForgetWanted(p, report.Version);
        p.ReportedWorldLine = Math.Max(p.ReportedWorldLine, report.WorldLine);
        return ReportOutcome.Accepted;
    }

    /// <summary>
    /// Versions that reports depend on beyond what their participant reported, highest per participant: published so
    /// that a participant persists up to them (<see cref="ClusterState.Wanted"/>). An entry goes once the participant
    /// reports that far, or with the next rollback decision.
    /// </summary>
    public IReadOnlyDictionary<long, long> WantedSnapshot()
    {
        if (_wantedSnapshot is null)
        {
            _wantedSnapshot = _wanted.Count == 0 ? ClusterState.NoneWanted : new Dictionary<long, long>(_wanted);
        }

        return _wantedSnapshot;
    }

    /// <summary>Counts changes of the wanted versions, so that a publisher can tell whether its last state still shows them.</summary>
    public int WantedChanges { get; private set; }

    private void NoteWanted(GraphParticipant reporter, Dependency[] deps)
    {
        foreach (var d in deps)
        {
            if (d.ObjectId != reporter.Id && _participants.TryGetValue(d.ObjectId, out var q) && d.Version > q.Latest
                && d.Version > _wanted.GetValueOrDefault(d.ObjectId))
            {
                _wanted[d.ObjectId] = d.Version;
                _wantedSnapshot = null;
                WantedChanges++;
            }
        }
    }

    private void ForgetWanted(GraphParticipant reporter, long version)
    {
        if (_wanted.TryGetValue(reporter.Id, out long wanted) && version >= wanted)
        {
            _wanted.Remove(reporter.Id);
            _wantedSnapshot = null;
            WantedChanges++;
        }
    }

    /// <summary>Replaces a restarted participant's uncommitted versions with what its storage reports.</summary>
    public void ReplaceUncommitted(long objectId, IEnumerable<VersionReport> persisted)
    {
        ArgumentNullException.ThrowIfNull(persisted);
        var p = _participants[objectId];
        _closure.Invalidate();
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
            _closure.Invalidate();
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
        if (_closure.IsValid)
        {
            AssertMatchesSpecification();
            return _closure.CommitClosed();
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

        _closure.Rebuild();
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
                _closure.Invalidate();
                p.Uncommitted.RemoveAll(n => n.Version > c);
            }
        }
    }

    /// <summary>
    /// How many versions of <paramref name="objectId"/> are reported but uncommitted, and the newest
    /// <paramref name="max"/> of them as reports, ascending; for inspection.
    /// </summary>
    internal (int Count, VersionReport[] Newest) UncommittedReports(long objectId, int max)
    {
        if (!_participants.TryGetValue(objectId, out var p))
        {
            return (0, []);
        }

        var open = p.Uncommitted;
        int take = Math.Min(max, open.Count);
        var newest = new VersionReport[take];
        for (int i = 0; i < take; i++)
        {
            var node = open[open.Count - take + i];
            newest[i] = new VersionReport(node.Version, node.WorldLine, [.. node.Dependencies]);
        }

        return (open.Count, newest);
    }

    /// <summary>The highest world-line <paramref name="objectId"/> reported a version in (0 before any report).</summary>
    internal long ReportedWorldLine(long objectId) => _participants.TryGetValue(objectId, out var p) ? p.ReportedWorldLine : 0;

    /// <summary>Per participant of the view, the highest version it reported (its committed version if none is open).</summary>
    internal Dictionary<long, long> ReportedSnapshot()
    {
        var reported = new Dictionary<long, long>(_participants.Count);
        foreach (var (id, p) in _participants)
        {
            reported[id] = p.Latest;
        }

        return reported;
    }

    /// <summary>Applies a decision to the view: drops every uncommitted version above each participant's cut.</summary>
    public void Apply(RollbackDecision decision)
    {
        ArgumentNullException.ThrowIfNull(decision);

        // What was wanted came from reports of lineages the decision may have ended; reports from here on say it again.
        if (_wanted.Count > 0)
        {
            _wanted.Clear();
            _wantedSnapshot = null;
            WantedChanges++;
        }

        foreach (var p in _participants.Values)
        {
            long cut = decision.CutFor(p.Id);
            if (cut < p.Committed)
            {
                throw new InvalidOperationException($"Decision {decision.WorldLine} would roll participant {p.Id} back below its committed version {p.Committed}.");
            }

            if (p.Latest > cut)
            {
                _closure.Invalidate();
                p.Uncommitted.RemoveAll(n => n.Version > cut);
            }
        }
    }

    /// <summary>
    /// The closure the incremental state holds (what <see cref="ComputeClosure"/> returns), or null while it is invalid.
    /// For tests: it must equal the specification after every operation.
    /// </summary>
    internal Dictionary<long, long>? IncrementalClosure() => _closure.Closure();

    /// <summary>Raises <paramref name="p"/>'s committed version and drops its versions at or below it.</summary>
    private void Commit(GraphParticipant p, long version)
    {
        p.Commit(version);
        _committed.Set(p.Slot, version);
    }

    private static bool AllInside(long self, GraphNode node, Dictionary<long, long> c, Dictionary<long, GraphParticipant>? lineage)
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

    /// <summary>In Debug builds, checks the incremental closure against the specification before each commit.</summary>
    [Conditional("DEBUG")]
    private void AssertMatchesSpecification()
    {
        var expected = ComputeClosure();
        var actual = _closure.Closure()!;
        foreach (var (id, version) in expected)
        {
            Debug.Assert(actual[id] == version, $"Incremental closure of participant {id} is {actual[id]}, the specification says {version}.");
        }
    }
}
