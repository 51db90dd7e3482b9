using System.Buffers.Binary;
using System.IO.Hashing;

namespace Dse.Darq;

/// <summary>
/// The DARQ state that cannot be rebuilt from the untruncated log, carried as the FasterLog commit cookie so that it is
/// persisted atomically with the commit it describes. Layout in docs/darq-format.md.
/// </summary>
internal sealed class DarqCommitState
{
    public const uint Magic = 0x5143_5144; // "DQCQ" little-endian
    public const ushort Version = 1;
    private const int FixedSize = 40;

    public long Incarnation { get; init; }

    /// <summary>The sequence number the next appended entry gets.</summary>
    public long NextSequence { get; init; }

    /// <summary>The sequence number of the first entry at or after the log's begin address.</summary>
    public long BeginSequence { get; init; }

    public Dictionary<long, long> Producers { get; init; } = [];

    public static int MaxSize(int maxProducers) => FixedSize + (16 * maxProducers) + 8;

    public byte[] Serialize()
    {
        var bytes = new byte[FixedSize + (16 * Producers.Count) + 8];
        var span = bytes.AsSpan();
        BinaryPrimitives.WriteUInt32LittleEndian(span, Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(span[4..], Version);
        BinaryPrimitives.WriteInt64LittleEndian(span[8..], Incarnation);
        BinaryPrimitives.WriteInt64LittleEndian(span[16..], NextSequence);
        BinaryPrimitives.WriteInt64LittleEndian(span[24..], BeginSequence);
        BinaryPrimitives.WriteInt32LittleEndian(span[32..], Producers.Count);
        int offset = FixedSize;
        foreach (var (producer, sequence) in Producers)
        {
            BinaryPrimitives.WriteInt64LittleEndian(span[offset..], producer);
            BinaryPrimitives.WriteInt64LittleEndian(span[(offset + 8)..], sequence);
            offset += 16;
        }

        BinaryPrimitives.WriteUInt64LittleEndian(span[offset..], XxHash64.HashToUInt64(span[..offset]));
        return bytes;
    }

    /// <summary>Decodes a cookie; throws <see cref="InvalidDataException"/> naming the commit when it is damaged.</summary>
    public static DarqCommitState Deserialize(ReadOnlySpan<byte> bytes, string where)
    {
        if (bytes.Length < FixedSize + 8)
        {
            throw Corrupt(where, $"the cookie has {bytes.Length} bytes, fewer than the {FixedSize + 8}-byte minimum");
        }

        uint magic = BinaryPrimitives.ReadUInt32LittleEndian(bytes);
        ushort version = BinaryPrimitives.ReadUInt16LittleEndian(bytes[4..]);
        if (magic != Magic || version != Version)
        {
            throw Corrupt(where, $"cookie magic 0x{magic:X8} version {version}; this build reads magic 0x{Magic:X8} version {Version}");
        }

        int count = BinaryPrimitives.ReadInt32LittleEndian(bytes[32..]);
        if (count < 0 || bytes.Length != FixedSize + (16L * count) + 8)
        {
            throw Corrupt(where, $"the cookie claims {count} producers but has {bytes.Length} bytes");
        }

        int end = FixedSize + (16 * count);
        if (BinaryPrimitives.ReadUInt64LittleEndian(bytes[end..]) != XxHash64.HashToUInt64(bytes[..end]))
        {
            throw Corrupt(where, "cookie checksum mismatch");
        }

        var producers = new Dictionary<long, long>(count);
        for (int offset = FixedSize; offset < end; offset += 16)
        {
            producers[BinaryPrimitives.ReadInt64LittleEndian(bytes[offset..])] = BinaryPrimitives.ReadInt64LittleEndian(bytes[(offset + 8)..]);
        }

        return new DarqCommitState
        {
            Incarnation = BinaryPrimitives.ReadInt64LittleEndian(bytes[8..]),
            NextSequence = BinaryPrimitives.ReadInt64LittleEndian(bytes[16..]),
            BeginSequence = BinaryPrimitives.ReadInt64LittleEndian(bytes[24..]),
            Producers = producers,
        };
    }

    private static InvalidDataException Corrupt(string where, string detail) => new($"{where}: the commit's DARQ state is corrupt: {detail}.");
}
