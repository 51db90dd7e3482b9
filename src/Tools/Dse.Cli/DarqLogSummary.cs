namespace Dse.Cli;

/// <summary>What a read-only scan of a DARQ's committed log found (<see cref="DarqLogReader"/>).</summary>
internal sealed class DarqLogSummary
{
    /// <summary>The newest valid commit, or -1 when the DARQ never committed.</summary>
    public long Commit { get; init; } = -1;

    /// <summary>Whether the commit was written under general speculation.</summary>
    public bool General { get; init; }

    public long BeginAddress { get; init; }

    public long TailAddress { get; init; }

    /// <summary>The sequence number of the entry at the begin address.</summary>
    public long BeginSequence { get; init; }

    /// <summary>The sequence number the next entry gets.</summary>
    public long NextSequence { get; init; }

    /// <summary>The current processor incarnation (0: none registered yet).</summary>
    public long Incarnation { get; init; }

    /// <summary>The incarnations REGISTER entries in the untruncated log name, in log order.</summary>
    public List<long> Registrations { get; } = [];

    /// <summary>Entries per kind name, in the order of the format's kind numbers.</summary>
    public SortedDictionary<int, (string Kind, long Count)> EntriesByKind { get; } = [];

    /// <summary>Every entry, when asked for: LSN, sequence number, kind, length in bytes.</summary>
    public List<(long Lsn, long Sequence, string Kind, int Length)> Entries { get; } = [];

    /// <summary>Entries skipped because a rollback voided them (general speculation).</summary>
    public long VoidedEntries { get; set; }

    public List<(long From, long Until)> VoidedRanges { get; init; } = [];

    /// <summary>General speculation: the persisted, unpruned versions the commit records.</summary>
    public List<long> Versions { get; init; } = [];

    /// <summary>IN, SELF and activity messages no completion or checkpoint consumed, by LSN.</summary>
    public SortedDictionary<long, UnconsumedMessage> Unconsumed { get; } = [];

    /// <summary>OUT messages no ACK entry acknowledged or discarded, by LSN: destination and payload length.</summary>
    public SortedDictionary<long, (string Destination, int Length)> PendingOut { get; } = [];

    /// <summary>OUT messages acknowledged, and those discarded on request.</summary>
    public long Acknowledged { get; set; }

    public long Discarded { get; set; }

    /// <summary>The deduplication table: producer id and the largest sequence number seen.</summary>
    public SortedDictionary<long, long> Producers { get; init; } = [];

    public long EntryCount => EntriesByKind.Values.Sum(e => e.Count);
}
