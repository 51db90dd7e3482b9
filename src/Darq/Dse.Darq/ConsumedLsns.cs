namespace Dse.Darq;

/// <summary>
/// The consumed LSNs at or after the begin address, kept only to tell a step that names one of them "already consumed"
/// rather than "unknown". Built for the common order: steps mostly consume messages in LSN order, so an LSN above every
/// one added before is appended to a sorted run (no hashing) and found by binary search; one added out of order goes to
/// a set. Truncation forgets a prefix in O(log n).
/// </summary>
/// <remarks>
/// The run is a sequence of fixed-size chunks, not one array that doubles: growing it never copies what it holds, and
/// no chunk is large enough for the large-object heap, whose fresh, zeroed memory a doubling array took on the stepping
/// thread (about 8 MB of it, and a 4 MB copy, over 300,000 steps of darq-step). A chunk truncation empties is kept for
/// reuse. Not thread-safe; the DARQ uses it under its gate.
/// </remarks>
internal sealed class ConsumedLsns
{
    /// <summary>LSNs per chunk by default: 32 KB chunks, well below the large-object threshold.</summary>
    public const int DefaultChunkSize = 4096;

    private readonly int _chunkSize;

    /// <summary>
    /// The run's chunks, in order: <c>_chunks[_first..]</c> are live. Within them the LSNs are strictly increasing: from
    /// index <see cref="_head"/> of the first live chunk, through every slot of the middle ones, to index
    /// <see cref="_tail"/> (exclusive) of the last one.
    /// </summary>
    private readonly List<long[]> _chunks = [];

    private int _first;
    private int _head;
    private int _tail;

    /// <summary>The last live chunk (<c>_chunks[^1]</c>), or null when the run is empty: the append path's chunk.</summary>
    private long[]? _current;

    /// <summary>The run's last (largest) LSN; meaningful only when the run is not empty.</summary>
    private long _last;

    /// <summary>A chunk truncation emptied, reused before a new one is allocated.</summary>
    private long[]? _spare;

    /// <summary>LSNs added below the run's last one (consumed out of LSN order).</summary>
    private readonly HashSet<long> _others = [];

    public ConsumedLsns(int chunkSize = DefaultChunkSize)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(chunkSize, 1);
        _chunkSize = chunkSize;
    }

    /// <summary>The number of LSNs.</summary>
    public int Count => RunCount + _others.Count;

    private int RunCount => RunIsEmpty ? 0 : ((_chunks.Count - _first - 1) * _chunkSize) + _tail - _head;

    private bool RunIsEmpty => _current is null;

    /// <summary>Adds an LSN; false when it is present.</summary>
    public bool Add(long lsn)
    {
        if (RunIsEmpty || lsn > _last)
        {
            if (_others.Count > 0 && _others.Contains(lsn))
            {
                return false;
            }

            Append(lsn);
            return true;
        }

        return !InRun(lsn) && _others.Add(lsn);
    }

    /// <summary>Whether the LSN is present.</summary>
    public bool Contains(long lsn) => InRun(lsn) || (_others.Count > 0 && _others.Contains(lsn));

    /// <summary>Forgets every LSN below <paramref name="until"/> (truncation passed them).</summary>
    public void ForgetBelow(long until)
    {
        // Whole chunks first: a chunk whose last LSN is below the cut goes.
        while (!RunIsEmpty && ChunkLast(_first) < until)
        {
            DropFirstChunk();
        }

        if (!RunIsEmpty)
        {
            int end = _first == _chunks.Count - 1 ? _tail : _chunkSize;
            var chunk = _chunks[_first];
            if (chunk[_head] < until)
            {
                int index = Array.BinarySearch(chunk, _head, end - _head, until);
                _head = index >= 0 ? index : ~index;
            }
        }

        if (_others.Count > 0)
        {
            _others.RemoveWhere(lsn => lsn < until);
        }
    }

    /// <summary>Forgets every LSN.</summary>
    public void Clear()
    {
        while (!RunIsEmpty)
        {
            DropFirstChunk();
        }

        _others.Clear();
    }

    private void Append(long lsn)
    {
        if (_current is { } current && _tail < current.Length)
        {
            current[_tail++] = lsn;
            _last = lsn;
            return;
        }

        AppendToNewChunk(lsn);
    }

    /// <summary>Appends to a new chunk: the run is empty or its last chunk is full.</summary>
    private void AppendToNewChunk(long lsn)
    {
        if (RunIsEmpty)
        {
            // Every chunk is gone: start over at the front of the list.
            _chunks.Clear();
            _first = 0;
            _head = 0;
        }
        else if (_first > 0 && _first >= _chunks.Count / 2)
        {
            // The list's dead front is at least half of it: drop it, so the list stays as long as the live run.
            _chunks.RemoveRange(0, _first);
            _first = 0;
        }

        var chunk = _spare ?? new long[_chunkSize];
        _spare = null;
        _chunks.Add(chunk);
        _current = chunk;
        chunk[0] = lsn;
        _tail = 1;
        _last = lsn;
    }

    /// <summary>Drops the first live chunk (keeping it as the spare) and moves to the next.</summary>
    private void DropFirstChunk()
    {
        _spare = _chunks[_first];
        _chunks[_first] = null!;
        _first++;
        _head = 0;
        if (_first == _chunks.Count)
        {
            _chunks.Clear();
            _first = 0;
            _tail = 0;
            _current = null;
        }
    }

    /// <summary>The last LSN of chunk <paramref name="index"/> (a live one).</summary>
    private long ChunkLast(int index) => index == _chunks.Count - 1 ? _last : _chunks[index][_chunkSize - 1];

    /// <summary>The first LSN of chunk <paramref name="index"/> (a live one).</summary>
    private long ChunkFirst(int index) => _chunks[index][index == _first ? _head : 0];

    private bool InRun(long lsn)
    {
        if (RunIsEmpty || lsn < ChunkFirst(_first) || lsn > _last)
        {
            return false;
        }

        // The last live chunk whose first LSN is at most lsn holds it, if any does.
        int low = _first;
        int high = _chunks.Count - 1;
        while (low < high)
        {
            int middle = low + ((high - low + 1) / 2);
            if (ChunkFirst(middle) <= lsn)
            {
                low = middle;
            }
            else
            {
                high = middle - 1;
            }
        }

        int start = low == _first ? _head : 0;
        int end = low == _chunks.Count - 1 ? _tail : _chunkSize;
        return Array.BinarySearch(_chunks[low], start, end - start, lsn) >= 0;
    }
}
