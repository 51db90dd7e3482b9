namespace Dse.Darq;

/// <summary>
/// The consumed LSNs at or after the begin address, kept only to tell a step that names one of them "already consumed"
/// rather than "unknown". Built for the common order: steps mostly consume messages in LSN order, so an LSN above every
/// one added before is appended to a sorted run (no hashing, no allocation but the run's amortized growth) and found
/// by binary search; one added out of order goes to a set. Truncation forgets a prefix in O(log n).
/// </summary>
/// <remarks>Not thread-safe; the DARQ uses it under its gate.</remarks>
internal sealed class ConsumedLsns
{
    /// <summary>Strictly increasing LSNs in <c>_run[_head.._tail)</c>.</summary>
    private long[] _run = new long[64];

    private int _head;
    private int _tail;

    /// <summary>LSNs added below the run's last one (consumed out of LSN order).</summary>
    private readonly HashSet<long> _others = [];

    /// <summary>The number of LSNs.</summary>
    public int Count => _tail - _head + _others.Count;

    /// <summary>Adds an LSN; false when it is present.</summary>
    public bool Add(long lsn)
    {
        if (_tail == _head || lsn > _run[_tail - 1])
        {
            if (_others.Count > 0 && _others.Contains(lsn))
            {
                return false;
            }

            if (_tail == _run.Length)
            {
                MakeRoom();
            }

            _run[_tail++] = lsn;
            return true;
        }

        return !InRun(lsn) && _others.Add(lsn);
    }

    /// <summary>Whether the LSN is present.</summary>
    public bool Contains(long lsn) => InRun(lsn) || (_others.Count > 0 && _others.Contains(lsn));

    /// <summary>Forgets every LSN below <paramref name="until"/> (truncation passed them).</summary>
    public void ForgetBelow(long until)
    {
        if (_head < _tail && _run[_head] < until)
        {
            int index = Array.BinarySearch(_run, _head, _tail - _head, until);
            _head = index >= 0 ? index : ~index;
            if (_head == _tail)
            {
                _head = 0;
                _tail = 0;
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
        _head = 0;
        _tail = 0;
        _others.Clear();
    }

    private bool InRun(long lsn)
        => _head < _tail && lsn >= _run[_head] && lsn <= _run[_tail - 1] && Array.BinarySearch(_run, _head, _tail - _head, lsn) >= 0;

    /// <summary>The run is full at its end: slides it down when at least half is forgotten, else doubles the array.</summary>
    private void MakeRoom()
    {
        int count = _tail - _head;
        if (_head >= _run.Length / 2)
        {
            Array.Copy(_run, _head, _run, 0, count);
        }
        else
        {
            var grown = new long[_run.Length * 2];
            Array.Copy(_run, _head, grown, 0, count);
            _run = grown;
        }

        _head = 0;
        _tail = count;
    }
}
