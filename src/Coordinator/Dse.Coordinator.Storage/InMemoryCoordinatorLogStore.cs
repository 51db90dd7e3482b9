namespace Dse.Coordinator;

/// <summary>
/// The storage behind <see cref="InMemoryCoordinatorLog"/> instances: records and an open generation that outlive
/// any one instance, so that a test or simulation can "restart" the coordinator and fence the old incarnation.
/// Thread-safe.
/// </summary>
public sealed class InMemoryCoordinatorLogStore
{
    /// <summary>Guards <see cref="_records"/> and <see cref="_generation"/>.</summary>
    private readonly Lock _lock = new();

    /// <summary>Durable records in append order; each array is owned by the store and never changes.</summary>
    private readonly List<byte[]> _records = [];

    /// <summary>How many times a log was opened on this store; the latest opener is the only one that may append.</summary>
    private long _generation;

    /// <summary>How many records the store holds.</summary>
    public int RecordCount
    {
        get
        {
            lock (_lock)
            {
                return _records.Count;
            }
        }
    }

    /// <summary>How many times an <see cref="InMemoryCoordinatorLog"/> was opened on this store.</summary>
    public long Generation
    {
        get
        {
            lock (_lock)
            {
                return _generation;
            }
        }
    }

    /// <summary>A copy of the records, oldest first.</summary>
    public IReadOnlyList<ReadOnlyMemory<byte>> GetRecords()
    {
        lock (_lock)
        {
            return Snapshot();
        }
    }

    /// <summary>Starts a new generation, which fences every earlier one, and returns it with the records so far.</summary>
    internal long Open(out IReadOnlyList<ReadOnlyMemory<byte>> records)
    {
        lock (_lock)
        {
            records = Snapshot();
            return ++_generation;
        }
    }

    /// <summary>Appends <paramref name="record"/> if <paramref name="generation"/> is still the latest; false when fenced.</summary>
    internal bool TryAppend(long generation, byte[] record)
    {
        lock (_lock)
        {
            if (generation != _generation)
            {
                return false;
            }

            _records.Add(record);
            return true;
        }
    }

    private ReadOnlyMemory<byte>[] Snapshot()
    {
        var copy = new ReadOnlyMemory<byte>[_records.Count];
        for (int i = 0; i < copy.Length; i++)
        {
            copy[i] = _records[i];
        }

        return copy;
    }
}
