using System.Collections;
using System.Collections.Frozen;

namespace Dse;

/// <summary>
/// An immutable committed map (participant id to committed version) as published in <see cref="ClusterState"/>. The
/// versions live in chunks of <see cref="ChunkSize"/> slots that snapshots share copy-on-write, and the ids with their
/// index are shared by every snapshot taken between two registrations: a snapshot costs an array of chunk references,
/// and a commit after it copies one chunk, whatever the number of participants.
/// </summary>
internal sealed class CommittedMap : IReadOnlyDictionary<long, long>
{
    /// <summary>Slots per chunk of versions.</summary>
    public const int ChunkSize = 1 << ChunkBits;

    private const int ChunkBits = 6;

    private readonly Slots _slots;
    private readonly long[][] _chunks;

    private CommittedMap(Slots slots, long[][] chunks)
    {
        _slots = slots;
        _chunks = chunks;
    }

    /// <inheritdoc />
    public int Count => _slots.Ids.Length;

    /// <inheritdoc />
    public IEnumerable<long> Keys => _slots.Ids;

    /// <inheritdoc />
    public IEnumerable<long> Values
    {
        get
        {
            for (int slot = 0; slot < Count; slot++)
            {
                yield return At(slot);
            }
        }
    }

    /// <inheritdoc />
    public long this[long key] => TryGetValue(key, out long value) ? value : throw new KeyNotFoundException($"Participant {key} is not in the committed map.");

    /// <inheritdoc />
    public bool ContainsKey(long key) => _slots.Index.ContainsKey(key);

    /// <inheritdoc />
    public bool TryGetValue(long key, out long value)
    {
        if (_slots.Index.TryGetValue(key, out int slot))
        {
            value = At(slot);
            return true;
        }

        value = 0;
        return false;
    }

    /// <inheritdoc />
    public IEnumerator<KeyValuePair<long, long>> GetEnumerator()
    {
        var ids = _slots.Ids;
        for (int slot = 0; slot < ids.Length; slot++)
        {
            yield return new KeyValuePair<long, long>(ids[slot], At(slot));
        }
    }

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    private long At(int slot) => _chunks[slot >> ChunkBits][slot & (ChunkSize - 1)];

    /// <summary>The participants' ids in slot order and their index; immutable, shared between snapshots.</summary>
    private sealed class Slots
    {
        public Slots(long[] ids)
        {
            var index = new Dictionary<long, int>(ids.Length);
            for (int i = 0; i < ids.Length; i++)
            {
                index.Add(ids[i], i);
            }

            Ids = ids;
            Index = index.ToFrozenDictionary();
        }

        public long[] Ids { get; }

        public FrozenDictionary<long, int> Index { get; }
    }

    /// <summary>
    /// The mutable side: participants get slots in registration order, versions are set per slot, and
    /// <see cref="Snapshot"/> hands out immutable maps. Not thread-safe (the graph's owner serializes access).
    /// </summary>
    internal sealed class Builder
    {
        private readonly List<long> _ids = [];
        private long[][] _chunks = [];

        // A chunk is the builder's own (writable in place) while its stamp equals _generation; every snapshot bumps the
        // generation, so each chunk it shares is copied before the next write to it. 64-bit: never wraps.
        private long[] _owned = [];
        private long _generation;

        // The ids of the snapshots since the last registration; null after one.
        private Slots? _slots;

        /// <summary>Adds a participant with version 0; returns its slot.</summary>
        public int Add(long id)
        {
            int slot = _ids.Count;
            _ids.Add(id);
            int chunk = slot >> ChunkBits;
            if (chunk == _chunks.Length)
            {
                Array.Resize(ref _chunks, Math.Max(1, _chunks.Length * 2));
                Array.Resize(ref _owned, _chunks.Length);
            }

            if (_chunks[chunk] is null)
            {
                _chunks[chunk] = new long[ChunkSize];
                _owned[chunk] = _generation;
            }

            // A slot a snapshot does not cover is still 0 in a shared chunk, and a later Set copies the chunk first.
            _slots = null;
            return slot;
        }

        /// <summary>Sets the version of <paramref name="slot"/>; snapshots taken before keep the old one.</summary>
        public void Set(int slot, long version)
        {
            int chunk = slot >> ChunkBits;
            if (_owned[chunk] != _generation)
            {
                _chunks[chunk] = (long[])_chunks[chunk].Clone();
                _owned[chunk] = _generation;
            }

            _chunks[chunk][slot & (ChunkSize - 1)] = version;
        }

        /// <summary>An immutable map of every participant's current version.</summary>
        public CommittedMap Snapshot()
        {
            _slots ??= new Slots([.. _ids]);
            int count = _ids.Count;
            var chunks = _chunks.AsSpan(0, (count + ChunkSize - 1) >> ChunkBits).ToArray();
            _generation++;
            return new CommittedMap(_slots, chunks);
        }
    }
}
