using System.Diagnostics;

namespace Dse;

/// <summary>
/// Incremental maintenance of a <see cref="DependencyGraph"/>'s greatest closure. The closure is exactly the set of
/// reported versions from which no dependency path (through the chain of a participant's own versions and the resolved
/// dependencies) reaches a dangling dependency, one on a version its owner has not reported. Each uncommitted node
/// keeps its resolved edges to versions outside the closure, the reverse edges, and a count of dangling dependencies,
/// each registered with the target participant's waiters. A report changes the state of its new version's ancestors
/// only, and usually of nothing but the new version.
/// </summary>
/// <remarks>
/// The graph owns the participants and their chains; this class owns the incremental state on them (the fields of
/// <see cref="GraphNode"/> and <see cref="GraphParticipant"/> it documents as its own) and whether that state is valid.
/// The rare paths of the graph invalidate it; the graph's next full recomputation commits the closure and calls
/// <see cref="Rebuild"/>. Not thread-safe: the graph's owner serializes access.
/// </remarks>
internal sealed class IncrementalClosure
{
    private readonly Dictionary<long, GraphParticipant> _participants;

    // Raises a participant's committed version (the graph mirrors it into its snapshots).
    private readonly Action<GraphParticipant, long> _commit;

    // Participants with closed versions that CommitClosed has not committed yet (GraphParticipant.Dirty set).
    private readonly List<GraphParticipant> _dirty = [];

    // Scratch of the searches, reused so that a report allocates nothing but its node (and edge arrays as they grow).
    private readonly List<GraphNode> _stack = [];
    private readonly List<GraphNode> _ancestors = [];
    private readonly List<GraphNode> _blocked = [];
    private int _mark;

    // Dependencies on unregistered participants resolved since the last rebuild: they have no waiter entry to be
    // resolved by, so a registration invalidates while there are any.
    private int _danglingOnUnregistered;

    /// <summary>Maintains the closure over <paramref name="participants"/>, which the graph owns and changes.</summary>
    /// <param name="participants">The graph's participants by id.</param>
    /// <param name="commit">Raises a participant's committed version.</param>
    public IncrementalClosure(Dictionary<long, GraphParticipant> participants, Action<GraphParticipant, long> commit)
    {
        _participants = participants;
        _commit = commit;
    }

    /// <summary>
    /// Whether the incremental state (GraphNode.Closed, Dangling, edges, GraphParticipant.Waiters, ClosedCount)
    /// describes the graph. Cleared by <see cref="Invalidate"/>; set again by <see cref="Rebuild"/>.
    /// </summary>
    public bool IsValid { get; private set; } = true;

    /// <summary>Rebuilds since creation: the graph's full recomputations (diagnostics and tests).</summary>
    public int FullRecomputeCount { get; private set; }

    /// <summary>Nodes the searches of reports visited since creation: their cost (tests bound it).</summary>
    public long SearchedNodes { get; private set; }

    /// <summary>
    /// The closure the incremental state holds (what <see cref="DependencyGraph.ComputeClosure"/> returns), or null while
    /// it is invalid.
    /// </summary>
    public Dictionary<long, long>? Closure()
    {
        if (!IsValid)
        {
            return null;
        }

        var result = new Dictionary<long, long>(_participants.Count);
        foreach (var p in _participants.Values)
        {
            result[p.Id] = p.ClosedCount > 0 ? p.Uncommitted[p.ClosedCount - 1].Version : p.Committed;
        }

        return result;
    }

    /// <summary>
    /// A participant registered: versions that already depend on it dangle without a waiter entry (it was unknown), so
    /// the state is rebuilt if there are any.
    /// </summary>
    public void OnParticipantAdded()
    {
        if (_danglingOnUnregistered > 0)
        {
            Invalidate();
        }
    }

    /// <summary>A rare path changed the graph in a way the incremental state does not follow.</summary>
    public void Invalidate()
    {
        if (!IsValid)
        {
            return;
        }

        IsValid = false;
        foreach (var p in _dirty)
        {
            p.Dirty = false;
        }

        _dirty.Clear();
    }

    /// <summary>
    /// Appends <paramref name="node"/> above <paramref name="p"/>'s latest version and updates the closure: resolves its
    /// dependencies, resolves the waiters its version satisfies, and closes whatever no longer reaches a dangling one.
    /// </summary>
    public void Append(GraphParticipant p, GraphNode node)
    {
        Debug.Assert(node.Version > p.Latest, "Only an append is incremental.");
        Resolve(node);
        var prev = p.Uncommitted.Count > 0 ? p.Uncommitted[^1] : null;
        node.Prev = prev;
        prev?.Next = node;
        p.Uncommitted.Add(node);

        // A waiter waits for a version above the previous latest, so the first version at or above it is this one.
        bool linked = false;
        while (p.Waiters.TryPeek(out var waiter, out long wanted) && wanted <= node.Version)
        {
            p.Waiters.Dequeue();
            Debug.Assert(!waiter.Closed && waiter.Dangling > 0, "A waiter is open and counts its dangling dependency.");
            waiter.Dangling--;
            AddEdge(waiter, node);
            linked = true;
        }

        // Only ancestors of the new version can change state, and they all reach it: if it dangles, nothing changes.
        if (node.Dangling > 0)
        {
            return;
        }

        if (!linked)
        {
            // No old version reaches the new one, so every open version still reaches a dangling dependency; the new one
            // closes exactly when it points at nothing open.
            if (node.OutCount == 0 && (prev is null || prev.Closed))
            {
                Close(node);
            }

            return;
        }

        if (!ReachesDangling(node))
        {
            CloseAncestors(node);
        }
    }

    /// <summary>Resolves a node's dependencies against the current graph: dropped, an edge, or a dangling one.</summary>
    private void Resolve(GraphNode node)
    {
        long self = node.Owner.Id;
        foreach (var d in node.Dependencies)
        {
            if (d.ObjectId == self)
            {
                continue;
            }

            if (!_participants.TryGetValue(d.ObjectId, out var q))
            {
                // Unregistered: dangles (ComputeClosure's limit of 0) until it registers, which invalidates (OnParticipantAdded).
                if (d.Version > 0)
                {
                    node.Dangling++;
                    _danglingOnUnregistered++;
                }

                continue;
            }

            if (d.Version <= q.Committed)
            {
                continue;
            }

            if (d.Version > q.Latest)
            {
                q.Waiters.Enqueue(node, d.Version);
                node.Dangling++;
                continue;
            }

            // The first version at or above the one depended on: the chain makes it imply everything below.
            int index = q.IndexOf(d.Version);
            var target = q.Uncommitted[index >= 0 ? index : ~index];
            if (!target.Closed)
            {
                AddEdge(node, target);
            }
        }
    }

    private static void AddEdge(GraphNode from, GraphNode to)
    {
        Push(ref from.Out, ref from.OutCount, to);
        Push(ref to.In, ref to.InCount, from);
    }

    private static void Push(ref GraphNode[]? array, ref int count, GraphNode node)
    {
        if (array is null)
        {
            array = new GraphNode[4];
        }
        else if (count == array.Length)
        {
            Array.Resize(ref array, count * 2);
        }

        array[count++] = node;
    }

    /// <summary>
    /// Whether <paramref name="start"/> reaches a dangling dependency: a depth-first search over open nodes that stops at
    /// the first one found. A node reaches the lowest open version of its own chain, so that one is checked at once:
    /// a chain blocked at its bottom (behind a participant that stopped) costs O(1), not its length.
    /// </summary>
    private bool ReachesDangling(GraphNode start)
    {
        int mark = ++_mark;
        var stack = _stack;
        stack.Clear();
        start.Mark = mark;
        stack.Add(start);
        try
        {
            while (stack.Count > 0)
            {
                var x = stack[^1];
                stack.RemoveAt(stack.Count - 1);
                SearchedNodes++;
                if (ChainBlocked(x))
                {
                    return true;
                }

                if (x.Prev is { Closed: false } prev && prev.Mark != mark)
                {
                    prev.Mark = mark;
                    stack.Add(prev);
                }

                for (int i = 0; i < x.OutCount; i++)
                {
                    var target = x.Out![i];
                    if (!target.Closed && target.Mark != mark)
                    {
                        target.Mark = mark;
                        stack.Add(target);
                    }
                }
            }

            return false;
        }
        finally
        {
            stack.Clear();
        }
    }

    /// <summary>
    /// Whether <paramref name="x"/> (open) dangles or reaches the lowest open version of its chain that dangles. Cheap,
    /// and true for every version above a chain blocked at its bottom (behind a participant that stopped reporting).
    /// </summary>
    private static bool ChainBlocked(GraphNode x)
    {
        var owner = x.Owner;
        return x.Dangling > 0 || owner.Uncommitted[owner.ClosedCount].Dangling > 0;
    }

    /// <summary>
    /// Closes the ancestors of <paramref name="start"/> that no longer reach a dangling dependency. Every open node that
    /// is not an ancestor kept what it reaches, so it still reaches a dangling dependency: an ancestor is blocked if it
    /// dangles or points at an open node outside the ancestors, and so is every ancestor that reaches a blocked one.
    /// Ancestors whose chain is blocked at its bottom are left outside too (they provably reach a dangling dependency):
    /// so the search does not walk what lies above them, which a lagging peer would otherwise make it do on every report.
    /// </summary>
    private void CloseAncestors(GraphNode start)
    {
        int inSet = ++_mark;
        var set = _ancestors;
        var blocked = _blocked;
        try
        {
            start.Mark = inSet;
            set.Add(start);
            for (int i = 0; i < set.Count; i++)
            {
                var x = set[i];
                if (x.Next is { Closed: false } next && next.Mark != inSet)
                {
                    next.Mark = inSet;
                    set.Add(next);
                }

                for (int k = 0; k < x.InCount; k++)
                {
                    var source = x.In![k];
                    if (!source.Closed && source.Mark != inSet && !ChainBlocked(source))
                    {
                        source.Mark = inSet;
                        set.Add(source);
                    }
                }
            }

            SearchedNodes += set.Count;

            int isBlocked = ++_mark;
            foreach (var x in set)
            {
                if (BlockedByOutside(x, inSet))
                {
                    x.BlockedMark = isBlocked;
                    blocked.Add(x);
                }
            }

            // What reaches a blocked ancestor is blocked: its chain successor and its reverse edges.
            for (int i = 0; i < blocked.Count; i++)
            {
                var x = blocked[i];
                if (x.Next is { } next && next.Mark == inSet && next.BlockedMark != isBlocked)
                {
                    next.BlockedMark = isBlocked;
                    blocked.Add(next);
                }

                for (int k = 0; k < x.InCount; k++)
                {
                    var source = x.In![k];
                    if (source.Mark == inSet && source.BlockedMark != isBlocked)
                    {
                        source.BlockedMark = isBlocked;
                        blocked.Add(source);
                    }
                }
            }

            // An unblocked node's chain predecessor is closed or unblocked too, so closed versions stay a prefix.
            foreach (var x in set)
            {
                if (x.BlockedMark != isBlocked)
                {
                    Close(x);
                }
            }
        }
        finally
        {
            set.Clear();
            blocked.Clear();
        }
    }

    private static bool BlockedByOutside(GraphNode x, int inSet)
    {
        if (x.Dangling > 0 || (x.Prev is { Closed: false } prev && prev.Mark != inSet))
        {
            return true;
        }

        for (int i = 0; i < x.OutCount; i++)
        {
            var target = x.Out![i];
            if (!target.Closed && target.Mark != inSet)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>Marks a node closed: it commits at the next <see cref="CommitClosed"/>.</summary>
    private void Close(GraphNode node)
    {
        Debug.Assert(!node.Closed && node.Dangling == 0, "Only an open node without dangling dependencies closes.");
        node.Closed = true;

        // Nothing searches through a closed node again: its edges are garbage.
        node.Out = null;
        node.OutCount = 0;
        node.In = null;
        node.InCount = 0;
        var p = node.Owner;
        p.ClosedCount++;
        if (!p.Dirty)
        {
            p.Dirty = true;
            _dirty.Add(p);
        }
    }

    /// <summary>Commits each dirty participant's closed prefix; returns whether anything moved. Requires a valid state.</summary>
    public bool CommitClosed()
    {
        Debug.Assert(IsValid, "Only a valid incremental state knows what is closed.");
        bool moved = false;
        foreach (var p in _dirty)
        {
            p.Dirty = false;
            int n = p.ClosedCount;
            if (n == 0)
            {
                continue;
            }

            var list = p.Uncommitted;
            long version = list[n - 1].Version;
            for (int i = 0; i < n; i++)
            {
                // Open nodes may still point at it (and see Closed); it points at nothing, so it holds no garbage alive.
                var node = list[i];
                node.Prev = null;
                node.Next = null;
            }

            if (n < list.Count)
            {
                list[n].Prev = null;
            }

            p.ClosedCount = 0;
            _commit(p, version);
            moved = true;
        }

        _dirty.Clear();
        return moved;
    }

    /// <summary>
    /// Rebuilds the incremental state from the graph after a full recomputation committed the closure: every version
    /// left is open, and reaches a dangling dependency.
    /// </summary>
    public void Rebuild()
    {
        FullRecomputeCount++;
        _danglingOnUnregistered = 0;
        foreach (var p in _participants.Values)
        {
            p.Waiters.Clear();
            p.ClosedCount = 0;
            p.Dirty = false;
            GraphNode? prev = null;
            foreach (var node in p.Uncommitted)
            {
                node.Closed = false;
                node.Dangling = 0;
                node.Out = null;
                node.OutCount = 0;
                node.In = null;
                node.InCount = 0;
                node.Prev = prev;
                node.Next = null;
                prev?.Next = node;
                prev = node;
            }
        }

        _dirty.Clear();
        foreach (var p in _participants.Values)
        {
            foreach (var node in p.Uncommitted)
            {
                Resolve(node);
            }
        }

        IsValid = true;
    }
}
