namespace Dse.Functions.Engine;

/// <summary>How a transaction is being run.</summary>
internal enum RunMode
{
    /// <summary>On the epoch-start snapshot plus its own writes, lock-free (Aria's first phase).</summary>
    Optimistic,

    /// <summary>After the epoch's lock-free commit, in TID order behind the lower transactions it conflicted with.</summary>
    Fallback,

    /// <summary>Alone, on committed state (<see cref="SerialEntityRunner"/>).</summary>
    Serial,
}

/// <summary>
/// One run of one transaction: its request, its TID and epoch, and (on the root's site only) the credit that has come
/// back and the signals merged from every part of its call graph.
/// </summary>
internal sealed class TxRun
{
    public TxRun(TransactionRequest request, long tid, long epoch, DateTimeOffset timestamp, ulong seed, RunMode mode)
    {
        Request = request;
        Tid = tid;
        Epoch = epoch;
        Timestamp = timestamp;
        Seed = seed;
        Mode = mode;
    }

    public TransactionRequest Request { get; }

    public long Tid { get; }

    public long Epoch { get; }

    public DateTimeOffset Timestamp { get; }

    public ulong Seed { get; }

    public RunMode Mode { get; }

    // Root site only, from here on.
    public UInt128 Ledger;
    public TxSignals Signals;
    public byte[]? RootResult;
    public bool Completed;

    public override string ToString() => $"T{Tid}@{Epoch}({Mode})";
}
