using System.Collections;
using System.Diagnostics;

namespace Dse.Darq;

/// <summary>
/// A map from log sequence numbers to values, enumerated in LSN order: a drop-in for the DARQ's
/// <see cref="SortedDictionary{TKey, TValue}"/> uses (Add, Remove, ContainsKey, TryGetValue, Count, ordered pairs,
/// Keys, Values) with O(1) lookups and updates instead of a tree walk and a node allocation per entry.
/// </summary>
/// <remarks>
/// LSNs are log addresses, so they are added in increasing order: the order is an append-only array of keys next to a
/// hash table, and a removal only drops the key from the table (the array skips dead keys lazily and compacts when it
/// is full). A key added out of order (not above every key added before) is still correct: the array is then rebuilt
/// by sorting on the next ordered access. Not thread-safe; the DARQ uses it under its gate.
/// </remarks>
/// <typeparam name="TValue">The value type.</typeparam>
internal sealed class LsnOrderedMap<TValue> : IEnumerable<KeyValuePair<long, TValue>>
{
    private readonly Dictionary<long, TValue> _items = [];

    /// <summary>
    /// Every key of <see cref="_items"/> in <c>_order[_head.._tail)</c>, plus removed (dead) keys not yet skipped; when
    /// <see cref="_sorted"/>, that range is strictly increasing (so each key is in it once) and <c>_order[_head]</c> is
    /// live unless the range is empty.
    /// </summary>
    private long[] _order = new long[16];

    private int _head;
    private int _tail;
    private bool _sorted = true;
    private int _version;

    /// <summary>The number of entries.</summary>
    public int Count => _items.Count;

    /// <summary>The keys in increasing order.</summary>
    public KeyCollection Keys => new(this);

    /// <summary>The values in key order.</summary>
    public ValueCollection Values => new(this);

    /// <summary>Gets the value of a key (throws <see cref="KeyNotFoundException"/> when absent), or adds or replaces it.</summary>
    public TValue this[long key]
    {
        get => _items[key];
        set
        {
            if (_items.ContainsKey(key))
            {
                _items[key] = value;
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
        _items.Add(key, value);
        Append(key);
    }

    /// <summary>Adds an entry unless the key is present.</summary>
    public bool TryAdd(long key, TValue value)
    {
        if (!_items.TryAdd(key, value))
        {
            return false;
        }

        Append(key);
        return true;
    }

    /// <summary>Whether the key is present.</summary>
    public bool ContainsKey(long key) => _items.ContainsKey(key);

    /// <summary>Gets the value of a key.</summary>
    public bool TryGetValue(long key, out TValue value) => _items.TryGetValue(key, out value!);

    /// <summary>Removes an entry; false when the key is absent.</summary>
    public bool Remove(long key) => Remove(key, out _);

    /// <summary>Removes an entry and returns its value; false when the key is absent.</summary>
    public bool Remove(long key, out TValue value)
    {
        if (!_items.Remove(key, out value!))
        {
            return false;
        }

        _version++;
        SkipDeadHead();
        return true;
    }

    /// <summary>Removes every entry.</summary>
    public void Clear()
    {
        _items.Clear();
        _head = 0;
        _tail = 0;
        _sorted = true;
        _version++;
    }

    /// <summary>The smallest key, or <see langword="false"/> when the map is empty.</summary>
    public bool TryGetFirst(out long key)
    {
        EnsureSorted();
        SkipDeadHead();
        if (_head == _tail)
        {
            key = 0;
            return false;
        }

        key = _order[_head];
        return true;
    }

    /// <summary>The largest key, or <see langword="false"/> when the map is empty.</summary>
    public bool TryGetLast(out long key)
    {
        EnsureSorted();
        for (int i = _tail - 1; i >= _head; i--)
        {
            if (_items.ContainsKey(_order[i]))
            {
                key = _order[i];
                return true;
            }
        }

        key = 0;
        return false;
    }

    /// <summary>Enumerates the entries in key order; the map must not change during the enumeration.</summary>
    public Enumerator GetEnumerator()
    {
        EnsureSorted();
        return new Enumerator(this, _head);
    }

    /// <summary>The entries whose keys are <paramref name="key"/> or more, in key order (found by binary search); the map must not change during the enumeration.</summary>
    /// <param name="key">The smallest key to enumerate.</param>
    public FromCollection From(long key)
    {
        EnsureSorted();
        int low = _head;
        int high = _tail;
        while (low < high)
        {
            int middle = low + ((high - low) / 2);
            if (_order[middle] < key)
            {
                low = middle + 1;
            }
            else
            {
                high = middle;
            }
        }

        return new FromCollection(new Enumerator(this, low));
    }

    IEnumerator<KeyValuePair<long, TValue>> IEnumerable<KeyValuePair<long, TValue>>.GetEnumerator() => GetEnumerator();

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    [Conditional("DEBUG")]
    private void AssertInvariants()
    {
        Debug.Assert(_head >= 0 && _head <= _tail && _tail <= _order.Length, "the live range is inside the array");
        Debug.Assert(_tail - _head >= _items.Count, "every key is in the order array");
    }

    /// <summary>Adds a key just added to <see cref="_items"/> to the order array.</summary>
    private void Append(long key)
    {
        _version++;
        if (_head == _tail)
        {
            // Empty: start over at the front (everything skipped so far was dead).
            _head = 0;
            _tail = 0;
            _sorted = true;
        }
        else if (_sorted && key <= _order[_tail - 1])
        {
            // Out of order (or a removed key added again): sorted again on the next ordered access.
            _sorted = false;
        }

        if (_tail == _order.Length)
        {
            if (!_sorted)
            {
                // The rebuild takes every key of the table, this one included.
                Rebuild(Math.Max(_order.Length, _items.Count * 2));
                return;
            }

            Compact();
        }

        _order[_tail++] = key;
        AssertInvariants();
    }

    /// <summary>Frees the end of the sorted array: drops dead keys when at least half are dead, else doubles the array.</summary>
    private void Compact()
    {
        Debug.Assert(_sorted, "only a sorted array is compacted");
        int live = 0;
        var target = _items.Count * 2 <= _order.Length ? _order : new long[_order.Length * 2];
        for (int i = _head; i < _tail; i++)
        {
            long key = _order[i];
            if (_items.ContainsKey(key))
            {
                target[live++] = key;
            }
        }

        _order = target;
        _head = 0;
        _tail = live;
    }

    private void EnsureSorted()
    {
        if (!_sorted)
        {
            Rebuild(_order.Length);
        }
    }

    /// <summary>Rebuilds the order array from the keys present, sorted; <paramref name="capacity"/> is the minimum size.</summary>
    private void Rebuild(int capacity)
    {
        var order = new long[Math.Max(16, Math.Max(capacity, _items.Count + 1))];
        _items.Keys.CopyTo(order, 0);
        Array.Sort(order, 0, _items.Count);
        _order = order;
        _head = 0;
        _tail = _items.Count;
        _sorted = true;
        AssertInvariants();
    }

    /// <summary>Moves the head past removed keys, so that the first key in the array is live (when sorted).</summary>
    private void SkipDeadHead()
    {
        while (_head < _tail && !_items.ContainsKey(_order[_head]))
        {
            _head++;
        }

        if (_head == _tail)
        {
            _head = 0;
            _tail = 0;
            _sorted = true;
        }
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
                long key = _map._order[_index++];
                if (_map._items.TryGetValue(key, out var value))
                {
                    _current = new KeyValuePair<long, TValue>(key, value);
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
