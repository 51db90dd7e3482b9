namespace Dse.Storage;

/// <summary>A live record of a <see cref="SnapshotLog"/>: a key (for example a version or sequence number) and its payload.</summary>
public sealed class SnapshotRecord
{
    internal SnapshotRecord(ulong key, ulong sequence, long address, ReadOnlyMemory<byte> payload)
    {
        Key = key;
        Sequence = sequence;
        Address = address;
        Payload = payload;
    }

    /// <summary>The caller-chosen key the record was appended under.</summary>
    public ulong Key { get; }

    /// <summary>The record's position in the log among all records ever appended, markers included (0, 1, ...).</summary>
    public ulong Sequence { get; }

    /// <summary>The device address of the record's header.</summary>
    public long Address { get; }

    /// <summary>The payload bytes (a private copy).</summary>
    public ReadOnlyMemory<byte> Payload { get; }

    /// <inheritdoc />
    public override string ToString() => $"SnapshotRecord(Key={Key}, Sequence={Sequence}, Address={Address}, {Payload.Length} bytes)";
}
