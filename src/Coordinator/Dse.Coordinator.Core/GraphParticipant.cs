namespace Dse;

/// <summary>
/// One participant of the <see cref="DependencyGraph"/>: its committed version, its chain of uncommitted versions and
/// what it acknowledged keeping through each rollback decision.
/// </summary>
internal sealed class GraphParticipant(long id, int slot)
{
    public long Id { get; } = id;

    // Position in registration order: the index of its committed version in the snapshots.
    public int Slot { get; } = slot;

    public long Committed { get; private set; }

    // Sorted by version; every entry is above Committed. With the incremental state valid, the first ClosedCount
    // entries are closed and the rest are not.
    public List<GraphNode> Uncommitted { get; } = [];

    public int ClosedCount;

    // Whether it is in IncrementalClosure's dirty list (it has closed versions that AdvanceCommitted has not committed).
    public bool Dirty;

    // Other participants' versions whose dependency on a version of this one above Latest is unresolved, keyed by
    // the version depended on.
    public PriorityQueue<GraphNode, long> Waiters { get; } = new();

    public Dictionary<long, long> KeptThrough { get; } = [];

    /// <summary>The highest world-line of a version it reported (0 before any report); for inspection.</summary>
    public long ReportedWorldLine { get; set; }

    public long Latest => Uncommitted.Count > 0 ? Uncommitted[^1].Version : Committed;

    /// <summary>The index of <paramref name="version"/> in <see cref="Uncommitted"/>, or the complement of where it would go.</summary>
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

    /// <summary>Raises the committed version and drops the uncommitted versions at or below it.</summary>
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
