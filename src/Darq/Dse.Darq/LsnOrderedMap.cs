using System.Collections;
using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Dse.Darq;

/// <summary>
/// A map from log sequence numbers to values, enumerated in LSN order: a drop-in for the DARQ's
/// <see cref="SortedDictionary{TKey, TValue}"/> uses (Add, Remove, ContainsKey, TryGetValue, Count, ordered pairs,
/// Keys, Values) without a node, a hash or a random memory access per entry in the common case.
/// </summary>
/// <remarks>
/// <para>LSNs are log addresses, so they are added in increasing order and mostly removed oldest first. The entries
/// (key, value, whether live) sit in one array, sorted by key, in <c>_entries[_head.._tail)</c>: an add appends, a
/// removal marks its entry dead, and the head moves past dead entries, so adding at the end and taking from the front
/// touch consecutive memory. A key is found by a look at the head, then by binary search. Dead entries in the middle
/// (messages taken out of order) are dropped when the array is full and at least half dead; otherwise it doubles.</para>
/// <para>A key added out of order (below the last one) is inserted in place, moving the entries after it: correct
/// but O(n), for the rare paths that do it (none of the DARQ's do in normal operation). Not thread-safe; the DARQ uses
/// it under its gate.</para>
/// </remarks>
/// <typeparam name="TValue">The value type.</typeparam>
internal sealed class LsnOrderedMap<TValue> : IEnumerable<KeyValuePair<long, TValue>>
{
    /// <summary>Sorted by key, strictly increasing, in <c>[_head, _tail)</c>; <c>_entries[_head]</c> and <c>_entries[_tail - 1]</c> are live unless the range is empty.</summary>
    private Entry[] _entries = new Entry[16];

    private int _head;
    private int _tail;
    private int _count;
    private int _version;

    /// <summary>A guess at the next key looked up away from the head: the entry after the last one found by search (any index; checked before use).</summary>
    private int _next;

    /// <summary>The number of entries.</summary>
    public int Count => _count;

    /// <summary>The keys in increasing order.</summary>
    public KeyCollection Keys => new(this);

    /// <summary>The values in key order.</summary>
    public ValueCollection Values => new(this);

    /// <summary>Gets the value of a key (throws <see cref="KeyNotFoundException"/> when absent), or adds or replaces it.</summary>
    public TValue this[long key]
    {
        get
        {
            int index = Find(key);
            return index >= 0 ? _entries[index].Value : throw new KeyNotFoundException($"The LSN {key} is not in the map.");
        }

        set
        {
            int index = Find(key);
            if (index >= 0)
            {
                _entries[index].Value = value;
                _version++;
            }
            else
            {
                Add(key, value);
            }
        }
    }

    /// <summary>Adds an entry; throws <see cref="ArgumentException"/> when the key is present.</summary>
    public void Add(long key, TValue value)
    {
        if (!TryAdd(key, value))
        {
            throw new ArgumentException($"The LSN {key} is already in the map.", nameof(key));
        }
    }

    /// <summary>Adds an entry unless the key is present.</summary>
    public bool TryAdd(long key, TValue value)
    {
        // An empty map is already back at the front: Remove and Clear reset the range when the last entry goes.
        if (_count > 0 && key <= _entries[_tail - 1].Key)
        {
            return InsertOutOfOrder(key, value);
        }

        if (_tail == _entries.Length)
        {
            MakeRoom();
        }

        _entries[_tail++] = new Entry(key, value);
        _count++;
        _version++;
        AssertInvariants();
        return true;
    }

    /// <summary>Whether the key is present.</summary>
    public bool ContainsKey(long key) => Find(key) >= 0;

    /// <summary>Gets the value of a key.</summary>
    public bool TryGetValue(long key, out TValue value)
    {
        int index = Find(key);
        if (index < 0)
        {
            value = default!;
            return false;
        }

        value = _entries[index].Value;
        return true;
    }

    /// <summary>Removes an entry; false when the key is absent.</summary>
    public bool Remove(long key) => Remove(key, out _);

    /// <summary>Removes an entry and returns its value; false when the key is absent.</summary>
    public bool Remove(long key, out TValue value)
    {
        int index = Find(key);
        if (index < 0)
        {
            value = default!;
            return false;
        }

        ref var entry = ref _entries[index];
        value = entry.Value;
        entry.Live = false;
        entry.Value = default!;
        _count--;
        _version++;
        if (_count == 0)
        {
            Array.Clear(_entries, _head, _tail - _head);
            _head = 0;
            _tail = 0;
        }
        else if (index == _head)
        {
            // Dead entries hold no value: the head just moves past them.
            while (!_entries[_head].Live)
            {
                _head++;
            }
        }
        else if (index == _tail - 1)
        {
            while (!_entries[_tail - 1].Live)
            {
                _tail--;
            }
        }

        AssertInvariants();
        return true;
    }

    /// <summary>Removes every entry.</summary>
    public void Clear()
    {
        Array.Clear(_entries, _head, _tail - _head);
        _head = 0;
        _tail = 0;
        _count = 0;
        _version++;
    }

    /// <summary>The smallest key, or <see langword="false"/> when the map is empty.</summary>
    public bool TryGetFirst(out long key)
    {
        key = _count == 0 ? 0 : _entries[_head].Key;
        return _count != 0;
    }

    /// <summary>The largest key, or <see langword="false"/> when the map is empty.</summary>
    public bool TryGetLast(out long key)
    {
        key = _count == 0 ? 0 : _entries[_tail - 1].Key;
        return _count != 0;
    }

    /// <summary>Enumerates the entries in key order; the map must not change during the enumeration.</summary>
    public Enumerator GetEnumerator() => new(this, _head);

    /// <summary>The entries whose keys are <paramref name="key"/> or more, in key order (found by binary search); the map must not change during the enumeration.</summary>
    /// <param name="key">The smallest key to enumerate.</param>
    public FromCollection From(long key) => new(new Enumerator(this, LowerBound(key)));

    IEnumerator<KeyValuePair<long, TValue>> IEnumerable<KeyValuePair<long, TValue>>.GetEnumerator() => GetEnumerator();

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    /// <summary>The index of the live entry with the key, or -1.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private int Find(long key)
    {
        if (_count == 0)
        {
            return -1;
        }

        // The common cases: the oldest entry (messages are mostly consumed in LSN order), or the one after the last
        // found elsewhere (a batch validates its steps' messages, in order, before any is removed).
        if (_entries[_head].Key == key)
        {
            _next = _head + 1;
            return _head;
        }

        int next = _next;
        if (next > _head && next < _tail && _entries[next].Key == key)
        {
            _next = next + 1;
            return _entries[next].Live ? next : -1;
        }

        return FindSlow(key);
    }

    private int FindSlow(long key)
    {
        if (key < _entries[_head].Key || key > _entries[_tail - 1].Key)
        {
            return -1;
        }

        int index = LowerBound(key);
        if (index < _tail && _entries[index].Key == key && _entries[index].Live)
        {
            _next = index + 1;
            return index;
        }

        return -1;
    }

    /// <summary>The index of the first entry (live or dead) whose key is <paramref name="key"/> or more, <c>_tail</c> if none.</summary>
    private int LowerBound(long key)
    {
        int low = _head;
        int high = _tail;
        while (low < high)
        {
            int middle = low + ((high - low) / 2);
            if (_entries[middle].Key < key)
            {
                low = middle + 1;
            }
            else
            {
                high = middle;
            }
        }

        return low;
    }

    /// <summary>A key at or below the last one: revives its dead entry, or inserts it in place.</summary>
    private bool InsertOutOfOrder(long key, TValue value)
    {
        int index = LowerBound(key);
        if (index < _tail && _entries[index].Key == key)
        {
            if (_entries[index].Live)
            {
                return false;
            }

            _entries[index] = new Entry(key, value);
        }
        else if (index == _head && _head > 0)
        {
            // Below every key, with room in front.
            _entries[--_head] = new Entry(key, value);
        }
        else
        {
            if (_tail == _entries.Length)
            {
                MakeRoom();
                index = LowerBound(key);
            }

            Array.Copy(_entries, index, _entries, index + 1, _tail - index);
            _entries[index] = new Entry(key, value);
            _tail++;
        }

        _count++;
        _version++;
        AssertInvariants();
        return true;
    }

    /// <summary>The array is full at its end: drops the dead entries when at least half are dead, else doubles the array.</summary>
    private void MakeRoom()
    {
        var target = _count * 2 <= _entries.Length ? _entries : new Entry[_entries.Length * 2];
        int live = 0;
        for (int i = _head; i < _tail; i++)
        {
            if (_entries[i].Live)
            {
                target[live++] = _entries[i];
            }
        }

        if (ReferenceEquals(target, _entries))
        {
            Array.Clear(_entries, live, _tail - live);
        }

        _entries = target;
        _head = 0;
        _tail = live;
    }

    [Conditional("DEBUG")]
    private void AssertInvariants()
    {
        Debug.Assert(_head >= 0 && _head <= _tail && _tail <= _entries.Length, "the range is inside the array");
        Debug.Assert(_count <= _tail - _head, "every entry is in the range");
        Debug.Assert(_count == 0 || (_entries[_head].Live && _entries[_tail - 1].Live), "the range starts and ends with live entries");
        Debug.Assert(_count > 0 || (_head == 0 && _tail == 0), "an empty map starts over at the front");
    }

    /// <summary>One key and its value; dead once removed (kept in place so that the order stays sorted).</summary>
    private struct Entry(long key, TValue value)
    {
        public long Key = key;
        public bool Live = true;
        public TValue Value = value;
    }

    /// <summary>Enumerates entries in key order, skipping removed keys.</summary>
    public struct Enumerator : IEnumerator<KeyValuePair<long, TValue>>
    {
        private readonly LsnOrderedMap<TValue> _map;
        private readonly int _version;
        private int _index;
        private KeyValuePair<long, TValue> _current;

        internal Enumerator(LsnOrderedMap<TValue> map, int index)
        {
            _map = map;
            _version = map._version;
            _index = index;
            _current = default;
        }

        /// <inheritdoc />
        public readonly KeyValuePair<long, TValue> Current => _current;

        readonly object IEnumerator.Current => _current;

        /// <inheritdoc />
        public bool MoveNext()
        {
            if (_version != _map._version)
            {
                throw new InvalidOperationException("The map changed during its enumeration.");
            }

            while (_index < _map._tail)
            {
                ref var entry = ref _map._entries[_index++];
                if (entry.Live)
                {
                    _current = new KeyValuePair<long, TValue>(entry.Key, entry.Value);
                    return true;
                }
            }

            return false;
        }

        /// <inheritdoc />
        public void Reset() => throw new NotSupportedException();

        /// <inheritdoc />
        public readonly void Dispose()
        {
        }
    }
    /// <summary>The entries from a key on, in key order (see <see cref="From"/>).</summary>
    public readonly struct FromCollection(Enumerator start)
    {
        /// <summary>Enumerates the entries from the key on.</summary>
        public Enumerator GetEnumerator() => start;
    }

    /// <summary>The keys in increasing order.</summary>
    public readonly struct KeyCollection(LsnOrderedMap<TValue> map) : IEnumerable<long>
    {
        /// <summary>The number of keys.</summary>
        public int Count => map.Count;

        /// <summary>Enumerates the keys in increasing order.</summary>
        public KeyEnumerator GetEnumerator() => new(map.GetEnumerator());

        IEnumerator<long> IEnumerable<long>.GetEnumerator() => GetEnumerator();

        IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();
    }

    /// <summary>The values in key order.</summary>
    public readonly struct ValueCollection(LsnOrderedMap<TValue> map) : IEnumerable<TValue>
    {
        /// <summary>The number of values.</summary>
        public int Count => map.Count;

        /// <summary>Enumerates the values in key order.</summary>
        public ValueEnumerator GetEnumerator() => new(map.GetEnumerator());

        IEnumerator<TValue> IEnumerable<TValue>.GetEnumerator() => GetEnumerator();

        IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();
    }

    /// <summary>Enumerates keys in increasing order.</summary>
    public struct KeyEnumerator(Enumerator inner) : IEnumerator<long>
    {
        private Enumerator _inner = inner;

        /// <inheritdoc />
        public readonly long Current => _inner.Current.Key;

        readonly object IEnumerator.Current => Current;

        /// <inheritdoc />
        public bool MoveNext() => _inner.MoveNext();

        /// <inheritdoc />
        public void Reset() => throw new NotSupportedException();

        /// <inheritdoc />
        public readonly void Dispose()
        {
        }
    }

    /// <summary>Enumerates values in key order.</summary>
    public struct ValueEnumerator(Enumerator inner) : IEnumerator<TValue>
    {
        private Enumerator _inner = inner;

        /// <inheritdoc />
        public readonly TValue Current => _inner.Current.Value;

        readonly object? IEnumerator.Current => Current;

        /// <inheritdoc />
        public bool MoveNext() => _inner.MoveNext();

        /// <inheritdoc />
        public void Reset() => throw new NotSupportedException();

        /// <inheritdoc />
        public readonly void Dispose()
        {
        }
    }
}
