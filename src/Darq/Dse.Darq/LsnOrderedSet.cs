using System.Collections;

namespace Dse.Darq;

/// <summary>
/// A set of log sequence numbers enumerated in increasing order: a drop-in for the DARQ's <see cref="SortedSet{T}"/>
/// uses (Add, Remove, Contains, Count, Min, Max, ordered enumeration) with O(1) updates; see <see cref="LsnOrderedMap{TValue}"/>.
/// </summary>
internal sealed class LsnOrderedSet : IEnumerable<long>
{
    private readonly LsnOrderedMap<bool> _map = new();

    /// <summary>The number of LSNs.</summary>
    public int Count => _map.Count;

    /// <summary>The smallest LSN, or 0 when the set is empty (as <see cref="SortedSet{T}.Min"/>).</summary>
    public long Min => _map.TryGetFirst(out long key) ? key : 0;

    /// <summary>The largest LSN, or 0 when the set is empty (as <see cref="SortedSet{T}.Max"/>).</summary>
    public long Max => _map.TryGetLast(out long key) ? key : 0;

    /// <summary>Adds an LSN; false when it is present.</summary>
    public bool Add(long lsn) => _map.TryAdd(lsn, true);

    /// <summary>Whether the LSN is present.</summary>
    public bool Contains(long lsn) => _map.ContainsKey(lsn);

    /// <summary>Removes an LSN; false when it is absent.</summary>
    public bool Remove(long lsn) => _map.Remove(lsn);

    /// <summary>Removes every LSN.</summary>
    public void Clear() => _map.Clear();

    /// <summary>Enumerates the LSNs in increasing order; the set must not change during the enumeration.</summary>
    public LsnOrderedMap<bool>.KeyEnumerator GetEnumerator() => _map.Keys.GetEnumerator();

    IEnumerator<long> IEnumerable<long>.GetEnumerator() => GetEnumerator();

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();
}
