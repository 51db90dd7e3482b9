using System.Buffers.Binary;

namespace Dse.Darq;

/// <summary>
/// General speculation: one persisted LibDse version of a DARQ, kept in the commit cookie until pruned. Restoring it voids
/// the log after <see cref="Tail"/> and rebuilds the state of that moment. Layout in docs/darq-format.md.
/// </summary>
internal sealed class DarqVersionRecord
{
    /// <summary>Version, tail, next sequence, truncation bound (address and sequence), metadata length, undo count.</summary>
    public const int FixedSize = 48;

    public long Version { get; init; }

    /// <summary>The log tail when the version was persisted: everything before it belongs to this version or earlier.</summary>
    public long Tail { get; init; }

    /// <summary>The sequence number the next entry got at that moment.</summary>
    public long NextSequence { get; init; }

    /// <summary>Where the completed prefix ended at that moment: once this version is the oldest restorable one, truncation may go this far.</summary>
    public long BoundAddress { get; init; }

    /// <summary>The sequence number of the entry at <see cref="BoundAddress"/>.</summary>
    public long BoundSequence { get; init; }

    /// <summary>LibDse's version metadata (world-line and dependencies).</summary>
    public byte[] Metadata { get; init; } = [];

    /// <summary>
    /// The deduplication table's value at this version for every producer changed since (-1: the producer was unknown):
    /// restoring applies it. Filled by the first change of each producer after the version.
    /// </summary>
    public Dictionary<long, long> Undo { get; init; } = [];

    /// <summary>1 once the commit carrying this record is durable (records read at recovery are); read and written with Volatile.</summary>
#pragma warning disable SA1401 // A field, so that it can be read and written with Volatile.
    public int DurableFlag;
#pragma warning restore SA1401

    /// <summary>The bytes the record takes in the commit cookie.</summary>
    public int Size => FixedSize + Metadata.Length + (16 * Undo.Count);

    public int WriteTo(Span<byte> span)
    {
        BinaryPrimitives.WriteInt64LittleEndian(span, Version);
        BinaryPrimitives.WriteInt64LittleEndian(span[8..], Tail);
        BinaryPrimitives.WriteInt64LittleEndian(span[16..], NextSequence);
        BinaryPrimitives.WriteInt64LittleEndian(span[24..], BoundAddress);
        BinaryPrimitives.WriteInt64LittleEndian(span[32..], BoundSequence);
        BinaryPrimitives.WriteInt32LittleEndian(span[40..], Metadata.Length);
        BinaryPrimitives.WriteInt32LittleEndian(span[44..], Undo.Count);
        Metadata.CopyTo(span[FixedSize..]);
        int offset = FixedSize + Metadata.Length;
        foreach (var (producer, value) in Undo)
        {
            BinaryPrimitives.WriteInt64LittleEndian(span[offset..], producer);
            BinaryPrimitives.WriteInt64LittleEndian(span[(offset + 8)..], value);
            offset += 16;
        }

        return offset;
    }

    /// <summary>Reads one record; <see langword="null"/> when the span is too short for what it claims.</summary>
    public static DarqVersionRecord? TryRead(ReadOnlySpan<byte> span, out int read)
    {
        read = 0;
        if (span.Length < FixedSize)
        {
            return null;
        }

        int metadata = BinaryPrimitives.ReadInt32LittleEndian(span[40..]);
        int undo = BinaryPrimitives.ReadInt32LittleEndian(span[44..]);
        if (metadata < 0 || undo < 0 || span.Length < FixedSize + (long)metadata + (16L * undo))
        {
            return null;
        }

        var undoTable = new Dictionary<long, long>(undo);
        int offset = FixedSize + metadata;
        for (int i = 0; i < undo; i++, offset += 16)
        {
            undoTable[BinaryPrimitives.ReadInt64LittleEndian(span[offset..])] = BinaryPrimitives.ReadInt64LittleEndian(span[(offset + 8)..]);
        }

        read = offset;
        return new DarqVersionRecord
        {
            Version = BinaryPrimitives.ReadInt64LittleEndian(span),
            Tail = BinaryPrimitives.ReadInt64LittleEndian(span[8..]),
            NextSequence = BinaryPrimitives.ReadInt64LittleEndian(span[16..]),
            BoundAddress = BinaryPrimitives.ReadInt64LittleEndian(span[24..]),
            BoundSequence = BinaryPrimitives.ReadInt64LittleEndian(span[32..]),
            Metadata = span.Slice(FixedSize, metadata).ToArray(),
            Undo = undoTable,
            DurableFlag = 1,
        };
    }
}
