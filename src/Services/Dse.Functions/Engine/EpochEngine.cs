namespace Dse.Functions.Engine;

/// <summary>The partitions, the sequencer and the counters of one runtime, and which partition owns which entity.</summary>
internal sealed class EpochEngine
{
    private readonly Partition[] _partitions;

    public EpochEngine(EntityRuntimeOptions options, EntityRegistry registry, IEpochLog log)
    {
        Options = options;
        Registry = registry;
        _partitions = new Partition[options.Partitions];
        for (int i = 0; i < _partitions.Length; i++)
        {
            _partitions[i] = new Partition(this, i);
        }

        Sequencer = new Sequencer(options, log, record =>
        {
            var message = new RecordMessage(record);
            foreach (Partition partition in _partitions)
            {
                partition.Post(message);
            }
        });
    }

    public EntityRuntimeOptions Options { get; }

    public EntityRegistry Registry { get; }

    public Sequencer Sequencer { get; }

    public RuntimeCounters Statistics { get; } = new();

    public IReadOnlyList<Partition> Partitions => _partitions;

    public int PartitionCount => _partitions.Length;

    public Partition PartitionOf(EntityAddress address) => _partitions[(int)(address.Hash % (ulong)_partitions.Length)];

    public void Start()
    {
        foreach (Partition partition in _partitions)
        {
            partition.Start();
        }

        Sequencer.RequestEpoch(1, urgent: false);
    }

    /// <summary>Stops sequencing and the partitions; every request without an outcome fails.</summary>
    public void Stop()
    {
        var stopped = new ObjectDisposedException(nameof(EntityRuntime), "The entity runtime stopped before the transaction had an outcome.");
        foreach (TransactionRequest request in Sequencer.Stop())
        {
            request.Fail(stopped);
        }

        foreach (Partition partition in _partitions)
        {
            partition.Stop();
        }

        foreach (Partition partition in _partitions)
        {
            foreach (TransactionRequest request in partition.Unfinished())
            {
                request.Fail(stopped);
            }
        }

        Sequencer.Dispose();
    }
}

/// <summary>Counts of what the runtime did, read while it runs.</summary>
internal sealed class RuntimeCounters
{
    private long _epochs;
    private long _lockFree;
    private long _fallbackCommits;
    private long _fallbackAborts;
    private long _logicAborts;
    private long _rescheduled;

    public EntityRuntimeStatistics Snapshot() => new(
        Interlocked.Read(ref _epochs),
        Interlocked.Read(ref _lockFree),
        Interlocked.Read(ref _fallbackCommits),
        Interlocked.Read(ref _fallbackAborts),
        Interlocked.Read(ref _logicAborts),
        Interlocked.Read(ref _rescheduled));

    public void CountEpoch() => Interlocked.Increment(ref _epochs);

    public void CountLockFree() => Interlocked.Increment(ref _lockFree);

    public void CountLogicAbort() => Interlocked.Increment(ref _logicAborts);

    public void CountRescheduled() => Interlocked.Increment(ref _rescheduled);

    public void CountFallback(bool committed)
    {
        if (committed)
        {
            Interlocked.Increment(ref _fallbackCommits);
        }
        else
        {
            Interlocked.Increment(ref _fallbackAborts);
        }
    }
}
