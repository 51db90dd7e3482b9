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
    public const ushort Version = 2;

    /// <summary>The previous layout (no speculation section); still read.</summary>
    public const ushort Version1 = 1;
    private const int FixedSize = 40;

    public long Incarnation { get; init; }

    /// <summary>The sequence number the next appended entry gets.</summary>
    public long NextSequence { get; init; }

    /// <summary>The sequence number of the first entry at or after the log's begin address.</summary>
    public long BeginSequence { get; init; }

    public Dictionary<long, long> Producers { get; init; } = [];

    /// <summary>Flag bit 0: the commit was written by a DARQ running general speculation (its log's history is versioned).</summary>
    public const ushort GeneralFlag = 1;

    /// <summary>Whether the DARQ that wrote this commit ran general speculation.</summary>
    public bool General { get; init; }

    /// <summary>General speculation: log ranges [From, Until) a rollback voided; recovery skips them.</summary>
    public List<(long From, long Until)> Voided { get; init; } = [];

    /// <summary>General speculation: the versions persisted and not yet pruned, ascending.</summary>
    public List<DarqVersionRecord> Versions { get; init; } = [];

    /// <summary>Room the speculation section may take in a commit record beyond <see cref="MaxSize"/>.</summary>
    public const int SpeculationRoom = 16 * 1024;

    /// <summary>
    /// Room the speculation section keeps free, past the budget that holds new actions back (DarqOptions.MaxSpeculationBytes),
    /// for the version records persisted after that; a producer change that would leave less than this is held too.
    /// </summary>
    public const int RecordReserve = 2 * 1024;

    public static int MaxSize(int maxProducers) => FixedSize + (16 * maxProducers) + 8 + 8;

    private int SpeculationSize() => SpeculationSize(Voided, Versions);

    /// <summary>The bytes the speculation section takes with these voided ranges and version records (at most <see cref="SpeculationRoom"/> fit).</summary>
    public static int SpeculationSize(List<(long From, long Until)> voided, List<DarqVersionRecord> versions)
    {
        int size = 8 + (16 * voided.Count);
        foreach (var v in versions)
        {
            size += v.Size;
        }

        return size;
    }

    public byte[] Serialize()
    {
        int speculation = SpeculationSize();
        var bytes = new byte[FixedSize + (16 * Producers.Count) + speculation + 8];
        var span = bytes.AsSpan();
        BinaryPrimitives.WriteUInt32LittleEndian(span, Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(span[4..], Version);
        BinaryPrimitives.WriteUInt16LittleEndian(span[6..], General ? GeneralFlag : (ushort)0);
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

        BinaryPrimitives.WriteInt32LittleEndian(span[offset..], Voided.Count);
        offset += 4;
        foreach (var (from, until) in Voided)
        {
            BinaryPrimitives.WriteInt64LittleEndian(span[offset..], from);
            BinaryPrimitives.WriteInt64LittleEndian(span[(offset + 8)..], until);
            offset += 16;
        }

        BinaryPrimitives.WriteInt32LittleEndian(span[offset..], Versions.Count);
        offset += 4;
        foreach (var v in Versions)
        {
            offset += v.WriteTo(span[offset..]);
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
        if (magic != Magic || (version != Version && version != Version1))
        {
            throw Corrupt(where, $"cookie magic 0x{magic:X8} version {version}; this build reads magic 0x{Magic:X8} versions {Version1} and {Version}");
        }

        ushort flags = BinaryPrimitives.ReadUInt16LittleEndian(bytes[6..]);
        if ((flags & ~GeneralFlag) != 0 || (version == Version1 && flags != 0))
        {
            throw Corrupt(where, $"unknown cookie flags 0x{flags:X4}");
        }

        int count = BinaryPrimitives.ReadInt32LittleEndian(bytes[32..]);
        long producersEnd = FixedSize + (16L * count);
        if (count < 0 || (version == Version1 ? bytes.Length != producersEnd + 8 : bytes.Length < producersEnd + 16))
        {
            throw Corrupt(where, $"the cookie claims {count} producers but has {bytes.Length} bytes");
        }

        int end = bytes.Length - 8;
        if (BinaryPrimitives.ReadUInt64LittleEndian(bytes[end..]) != XxHash64.HashToUInt64(bytes[..end]))
        {
            throw Corrupt(where, "cookie checksum mismatch");
        }

        var producers = new Dictionary<long, long>(count);
        for (int offset = FixedSize; offset < producersEnd; offset += 16)
        {
            producers[BinaryPrimitives.ReadInt64LittleEndian(bytes[offset..])] = BinaryPrimitives.ReadInt64LittleEndian(bytes[(offset + 8)..]);
        }

        var state = new DarqCommitState
        {
            Incarnation = BinaryPrimitives.ReadInt64LittleEndian(bytes[8..]),
            NextSequence = BinaryPrimitives.ReadInt64LittleEndian(bytes[16..]),
            BeginSequence = BinaryPrimitives.ReadInt64LittleEndian(bytes[24..]),
            Producers = producers,
            General = (flags & GeneralFlag) != 0,
        };
        if (version == Version)
        {
            ReadSpeculation(bytes[(int)producersEnd..end], state, where);
        }

        return state;
    }

    private static void ReadSpeculation(ReadOnlySpan<byte> section, DarqCommitState state, string where)
    {
        int voided = BinaryPrimitives.ReadInt32LittleEndian(section);
        if (voided < 0 || section.Length < 8 + (16L * voided))
        {
            throw Corrupt(where, $"the speculation section claims {voided} voided ranges in {section.Length} bytes");
        }

        int offset = 4;
        for (int i = 0; i < voided; i++, offset += 16)
        {
            state.Voided.Add((BinaryPrimitives.ReadInt64LittleEndian(section[offset..]), BinaryPrimitives.ReadInt64LittleEndian(section[(offset + 8)..])));
        }

        int versions = BinaryPrimitives.ReadInt32LittleEndian(section[offset..]);
        offset += 4;
        for (int i = 0; i < versions; i++)
        {
            var record = DarqVersionRecord.TryRead(section[offset..], out int read)
                ?? throw Corrupt(where, $"version record {i} of {versions} is truncated");
            state.Versions.Add(record);
            offset += read;
        }

        if (versions < 0 || offset != section.Length)
        {
            throw Corrupt(where, $"the speculation section has {section.Length - offset} bytes left over after {versions} versions");
        }
    }

    private static InvalidDataException Corrupt(string where, string detail) => new($"{where}: the commit's DARQ state is corrupt: {detail}.");
}
