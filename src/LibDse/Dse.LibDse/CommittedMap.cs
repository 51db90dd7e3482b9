using System.Collections;
using System.Collections.Frozen;

namespace Dse;

/// <summary>
/// An immutable committed map (participant id to committed version) as published in <see cref="ClusterState"/>: the
/// ids and their index are shared by every snapshot taken between two registrations, and each snapshot owns a copy of
/// the versions, so taking one costs a copy of an array instead of a dictionary of inserts.
/// </summary>
internal sealed class CommittedMap : IReadOnlyDictionary<long, long>
{
    private readonly Slots _slots;
    private readonly long[] _versions;

    /// <summary>Creates a map over <paramref name="slots"/>; it takes ownership of <paramref name="versions"/>.</summary>
    public CommittedMap(Slots slots, long[] versions)
    {
        ArgumentNullException.ThrowIfNull(slots);
        ArgumentNullException.ThrowIfNull(versions);
        if (versions.Length != slots.Ids.Length)
        {
            throw new ArgumentException($"{versions.Length} versions for {slots.Ids.Length} participants.", nameof(versions));
        }

        _slots = slots;
        _versions = versions;
    }

    /// <inheritdoc />
    public int Count => _versions.Length;

    /// <inheritdoc />
    public IEnumerable<long> Keys => _slots.Ids;

    /// <inheritdoc />
    public IEnumerable<long> Values => _versions;

    /// <inheritdoc />
    public long this[long key] => TryGetValue(key, out long value) ? value : throw new KeyNotFoundException($"Participant {key} is not in the committed map.");

    /// <inheritdoc />
    public bool ContainsKey(long key) => _slots.Index.ContainsKey(key);

    /// <inheritdoc />
    public bool TryGetValue(long key, out long value)
    {
        if (_slots.Index.TryGetValue(key, out int slot))
        {
            value = _versions[slot];
            return true;
        }

        value = 0;
        return false;
    }

    /// <inheritdoc />
    public IEnumerator<KeyValuePair<long, long>> GetEnumerator()
    {
        var ids = _slots.Ids;
        for (int i = 0; i < ids.Length; i++)
        {
            yield return new KeyValuePair<long, long>(ids[i], _versions[i]);
        }
    }

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    /// <summary>The participants' ids in slot order and their index; immutable, shared between snapshots.</summary>
    internal sealed class Slots
    {
        /// <summary>Creates the slots of <paramref name="ids"/> (distinct); takes ownership of the array.</summary>
        public Slots(long[] ids)
        {
            ArgumentNullException.ThrowIfNull(ids);
            var index = new Dictionary<long, int>(ids.Length);
            for (int i = 0; i < ids.Length; i++)
            {
                index.Add(ids[i], i);
            }

            Ids = ids;
            Index = index.ToFrozenDictionary();
        }

        /// <summary>The ids; the slot of an id is its position.</summary>
        public long[] Ids { get; }

        /// <summary>Id to slot.</summary>
        public FrozenDictionary<long, int> Index { get; }
    }
}
