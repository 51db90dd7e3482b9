namespace Dse.Functions.Engine;

/// <summary>
/// The sequencer's decision for one epoch: which new requests it holds, in TID order from <paramref name="FirstTid"/>,
/// its timestamp and its random seed. Everything the partitions do in the epoch is a function of the records so far.
/// </summary>
internal sealed record EpochRecord(long Epoch, long FirstTid, DateTimeOffset Timestamp, ulong Seed, TransactionRequest[] Requests);

/// <summary>Where records go as they are cut: in memory here; the durable runtime keeps them in its ingress log.</summary>
internal interface IEpochLog
{
    void Append(EpochRecord record);
}

/// <summary>Keeps every record (tests read them back).</summary>
internal sealed class InMemoryEpochLog : IEpochLog
{
    private readonly List<EpochRecord> _records = [];

    public IReadOnlyList<EpochRecord> Records
    {
        get
        {
            lock (_records)
            {
                return [.. _records];
            }
        }
    }

    public void Append(EpochRecord record)
    {
        lock (_records)
        {
            _records.Add(record);
        }
    }
}

/// <summary>Keeps nothing (the default: a runtime without durability needs no history).</summary>
internal sealed class DiscardingEpochLog : IEpochLog
{
    public static readonly DiscardingEpochLog Instance = new();

    public void Append(EpochRecord record)
    {
    }
}
