using System.Buffers.Binary;
using System.IO.Hashing;
using System.Text;

namespace Dse.Darq;

/// <summary>
/// The byte layout of DARQ log entries; docs/darq-format.md is the specification. Entries are written in header version 2
/// and read in versions 1 and 2, which differ only in their checksum.
/// </summary>
internal static class DarqEntryFormat
{
    /// <summary>The header version written: its checksum is XXH3 of the whole entry, the checksum field read as zero.</summary>
    public const byte Version = 2;

    /// <summary>The first header version, still read: its checksum is XXH64 of the body, seeded with XXH64 of header bytes 0..15.</summary>
    public const byte Version1 = 1;

    /// <summary>Where the checksum field starts, in the header.</summary>
    private const int ChecksumOffset = 16;

    /// <summary>The longest entry whose version-2 checksum is verified through a copy on the stack; longer ones are hashed in parts.</summary>
    private const int StackVerifyLimit = 256;

    /// <summary>Version, kind, flags, body length, sequence, checksum.</summary>
    public const int HeaderSize = 24;

    /// <summary>The longest destination name of an OUT message, in UTF-8 bytes.</summary>
    public const int MaxDestinationBytes = 256;

    /// <summary>IN flag: the entry carries a producer id and sequence number for deduplication.</summary>
    public const ushort HasDedupFlag = 1;

    /// <summary>SELF flag: the message is an activity (its payload is an activity envelope, see DarqActivity).</summary>
    public const ushort ActivityFlag = 1;

    /// <summary>ACK flag (revision 5): the OUT message was discarded on request (<see cref="Darq.DiscardOutAsync"/>), not acknowledged.</summary>
    public const ushort DiscardedFlag = 1;

    /// <summary>FasterLog's per-entry header (the length) when entries carry no FasterLog checksum.</summary>
    public const int FasterHeaderSize = 4;

    /// <summary>Bytes an entry of <paramref name="entryLength"/> bytes advances the log: FasterLog's header plus the entry rounded up to 4 bytes.</summary>
    public static int LogFootprint(int entryLength) => FasterHeaderSize + ((entryLength + 3) & ~3);

    public static byte[] In(long sequence, ReadOnlySpan<byte> payload, long producerId, long producerSequence, bool dedup)
    {
        var entry = InUnsealed(payload, producerId, producerSequence, dedup);
        SealIn(entry, sequence, dedup);
        return entry;
    }

    /// <summary>An IN entry with its body written but no header yet (see <see cref="SealIn"/>), so that it can be built before the sequence is known.</summary>
    public static byte[] InUnsealed(ReadOnlySpan<byte> payload, long producerId, long producerSequence, bool dedup)
    {
        var entry = new byte[HeaderSize + 16 + payload.Length];
        var body = entry.AsSpan(HeaderSize);
        BinaryPrimitives.WriteInt64LittleEndian(body, dedup ? producerId : 0);
        BinaryPrimitives.WriteInt64LittleEndian(body[8..], dedup ? producerSequence : 0);
        payload.CopyTo(body[16..]);
        return entry;
    }

    /// <summary>Writes the header (with its sequence number and checksum) of an entry from <see cref="InUnsealed"/>.</summary>
    public static void SealIn(byte[] entry, long sequence, bool dedup) => Seal(entry, DarqEntryKind.In, dedup ? HasDedupFlag : (ushort)0, sequence);

    public static byte[] Self(long sequence, ReadOnlySpan<byte> payload, ushort flags = 0)
    {
        var entry = new byte[SelfLength(payload.Length)];
        WriteSelf(entry, sequence, payload, flags);
        return entry;
    }

    public static int SelfLength(int payloadLength) => HeaderSize + payloadLength;

    /// <summary>Writes a SELF entry into <paramref name="entry"/>, exactly <see cref="SelfLength"/> bytes long.</summary>
    public static void WriteSelf(Span<byte> entry, long sequence, ReadOnlySpan<byte> payload, ushort flags = 0)
    {
        payload.CopyTo(entry[HeaderSize..]);
        Seal(entry, DarqEntryKind.Self, flags, sequence);
    }

    public static byte[] Out(long sequence, string destination, ReadOnlySpan<byte> payload)
    {
        var entry = new byte[OutLength(Encoding.UTF8.GetByteCount(destination), payload.Length)];
        WriteOut(entry, sequence, destination, payload);
        return entry;
    }

    public static int OutLength(int destinationBytes, int payloadLength) => HeaderSize + 2 + destinationBytes + payloadLength;

    /// <summary>Writes an OUT entry into <paramref name="entry"/>, exactly <see cref="OutLength"/> bytes long.</summary>
    public static void WriteOut(Span<byte> entry, long sequence, string destination, ReadOnlySpan<byte> payload)
    {
        var body = entry[HeaderSize..];
        int destinationLength = Encoding.UTF8.GetBytes(destination, body[2..]);
        BinaryPrimitives.WriteUInt16LittleEndian(body, (ushort)destinationLength);
        payload.CopyTo(body[(2 + destinationLength)..]);
        Seal(entry, DarqEntryKind.Out, 0, sequence);
    }

    public static int CompletionLength(int consumedCount) => HeaderSize + 16 + (8 * consumedCount);

    public static byte[] Completion(long sequence, long incarnation, int stepEntryCount, IReadOnlyList<long> consumed)
    {
        var entry = new byte[CompletionLength(consumed.Count)];
        WriteCompletion(entry, sequence, incarnation, stepEntryCount, consumed);
        return entry;
    }

    /// <summary>Writes a completion record into <paramref name="entry"/>, exactly <see cref="CompletionLength"/> bytes long.</summary>
    public static void WriteCompletion(Span<byte> entry, long sequence, long incarnation, int stepEntryCount, IReadOnlyList<long> consumed)
    {
        var body = entry[HeaderSize..];
        BinaryPrimitives.WriteInt64LittleEndian(body, incarnation);
        BinaryPrimitives.WriteInt32LittleEndian(body[8..], stepEntryCount);
        BinaryPrimitives.WriteInt32LittleEndian(body[12..], consumed.Count);
        for (int i = 0; i < consumed.Count; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(body[(16 + (8 * i))..], consumed[i]);
        }

        Seal(entry, DarqEntryKind.Completion, 0, sequence);
    }

    /// <summary>
    /// Writes the completion record of a step that consumes <paramref name="consumed"/> and appends nothing else, exactly
    /// <see cref="CompletionLength"/>(1) bytes long: the same bytes as the general overload, written as six whole words
    /// and checksummed from them (<see cref="Xxh3Of48"/>) rather than read back from memory.
    /// </summary>
    public static void WriteCompletion(Span<byte> entry, long sequence, long incarnation, long consumed)
    {
        ArgumentOutOfRangeException.ThrowIfNotEqual(entry.Length, CompletionLength(1));
        const int bodyLength = 8 + 4 + 4 + 8;
        // Version, kind, flags 0, body length; then stepEntryCount 0 and consumed count 1 as one word.
        ulong word0 = Version | ((ulong)DarqEntryKind.Completion << 8) | ((ulong)bodyLength << 32);
        ulong counts = 1UL << 32;
        ulong checksum = Xxh3Of48(word0, unchecked((ulong)sequence), unchecked((ulong)incarnation), counts, unchecked((ulong)consumed));
        BinaryPrimitives.WriteUInt64LittleEndian(entry, word0);
        BinaryPrimitives.WriteInt64LittleEndian(entry[8..], sequence);
        BinaryPrimitives.WriteUInt64LittleEndian(entry[ChecksumOffset..], checksum);
        BinaryPrimitives.WriteInt64LittleEndian(entry[HeaderSize..], incarnation);
        BinaryPrimitives.WriteUInt64LittleEndian(entry[(HeaderSize + 8)..], counts);
        BinaryPrimitives.WriteInt64LittleEndian(entry[(HeaderSize + 16)..], consumed);
    }

    /// <summary>
    /// XXH3-64 (seed 0, the default secret) of a 48-byte entry given as its six little-endian words, the third (the
    /// checksum field) zero: the value <see cref="XxHash3.HashToUInt64(ReadOnlySpan{byte}, long)"/> gives for those bytes,
    /// computed from registers. It is XXH3's path for 17 to 128 bytes, which for 48 bytes mixes the 16-byte lanes at
    /// offsets 0, 32 and (twice, with different secret words) 16.
    /// </summary>
    internal static ulong Xxh3Of48(ulong word0, ulong word1, ulong word3, ulong word4, ulong word5)
    {
        // The first 64 bytes of XXH3's default secret, as little-endian words.
        const ulong secret0 = 0xBE4BA423396CFEB8, secret1 = 0x1CAD21F72C81017C, secret2 = 0xDB979083E96DD4DE, secret3 = 0x1F67B3B7A4A44072;
        const ulong secret4 = 0x78E5C0CC4EE679CB, secret5 = 0x2172FFCC7DD05A82, secret6 = 0x8E2443F7744608B8, secret7 = 0x4C263A81E69035E0;
        const ulong prime1 = 0x9E3779B185EBCA87;
        unchecked
        {
            ulong acc = 48 * prime1;
            acc += Fold(word0 ^ secret0, word1 ^ secret1);
            acc += Fold(word4 ^ secret2, word5 ^ secret3);
            acc += Fold(secret4, word3 ^ secret5);
            acc += Fold(secret6, word3 ^ secret7);
            acc ^= acc >> 37;
            acc *= 0x165667919E3779F9;
            return acc ^ (acc >> 32);
        }

        static ulong Fold(ulong left, ulong right)
        {
            ulong high = Math.BigMul(left, right, out ulong low);
            return high ^ low;
        }
    }

    /// <summary>A checkpoint record: the same layout as a completion, listing the SELF messages the checkpoint replaced.</summary>
    public static byte[] Checkpoint(long sequence, long incarnation, int selfCount, IReadOnlyList<long> replaced)
    {
        var entry = Completion(sequence, incarnation, selfCount, replaced);
        Seal(entry, DarqEntryKind.Checkpoint, 0, sequence);
        return entry;
    }

    public static byte[] Register(long sequence, long incarnation)
    {
        var entry = new byte[HeaderSize + 8];
        BinaryPrimitives.WriteInt64LittleEndian(entry.AsSpan(HeaderSize), incarnation);
        Seal(entry, DarqEntryKind.Register, 0, sequence);
        return entry;
    }

    /// <summary>An ACK entry: the destination acknowledged the OUT entry at <paramref name="outLsn"/> (or, <paramref name="discarded"/>, it was given up).</summary>
    public static byte[] Ack(long sequence, long outLsn, bool discarded = false) => Ack(sequence, [outLsn], discarded);

    /// <summary>An ACK entry for several OUT entries, acknowledged together (or, <paramref name="discarded"/>, given up).</summary>
    public static byte[] Ack(long sequence, ReadOnlySpan<long> outLsns, bool discarded = false)
    {
        var entry = new byte[HeaderSize + 8 + (8 * outLsns.Length)];
        var body = entry.AsSpan(HeaderSize);
        BinaryPrimitives.WriteInt32LittleEndian(body, outLsns.Length);
        for (int i = 0; i < outLsns.Length; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(body[(8 + (8 * i))..], outLsns[i]);
        }

        Seal(entry, DarqEntryKind.Ack, discarded ? DiscardedFlag : (ushort)0, sequence);
        return entry;
    }

    /// <summary>A ROLLBACK entry: a restore to <paramref name="version"/> voided the log from <paramref name="voidFrom"/> up to this entry.</summary>
    public static byte[] Rollback(long sequence, long version, long voidFrom)
    {
        var entry = new byte[HeaderSize + 16];
        var body = entry.AsSpan(HeaderSize);
        BinaryPrimitives.WriteInt64LittleEndian(body, version);
        BinaryPrimitives.WriteInt64LittleEndian(body[8..], voidFrom);
        Seal(entry, DarqEntryKind.Rollback, 0, sequence);
        return entry;
    }

    /// <summary>Checks and decodes an entry's header; returns why it is invalid, or <see langword="null"/>.</summary>
    public static string? TryParse(ReadOnlySpan<byte> entry, out DarqEntryKind kind, out ushort flags, out long sequence)
    {
        kind = default;
        flags = 0;
        sequence = 0;
        if (entry.Length < HeaderSize)
        {
            return $"the entry has {entry.Length} bytes, fewer than the {HeaderSize}-byte header";
        }

        byte version = entry[0];
        if (version is not (Version or Version1))
        {
            return $"unsupported entry format version {version} (this build reads versions {Version1} and {Version})";
        }

        int bodyLength = BinaryPrimitives.ReadInt32LittleEndian(entry[4..]);
        if (bodyLength != entry.Length - HeaderSize)
        {
            return $"the header gives a body of {bodyLength} bytes but the entry holds {entry.Length - HeaderSize}";
        }

        ulong stored = BinaryPrimitives.ReadUInt64LittleEndian(entry[ChecksumOffset..]);
        if (stored != (version == Version ? VerifiedChecksum(entry) : ChecksumVersion1(entry)))
        {
            return "checksum mismatch";
        }

        kind = (DarqEntryKind)entry[1];
        flags = BinaryPrimitives.ReadUInt16LittleEndian(entry[2..]);
        sequence = BinaryPrimitives.ReadInt64LittleEndian(entry[8..]);
        int minimumBody = kind switch
        {
            DarqEntryKind.In => 16,
            DarqEntryKind.Self => 0,
            DarqEntryKind.Out => 2,
            DarqEntryKind.Completion => 16,
            DarqEntryKind.Register => 8,
            DarqEntryKind.Ack => 8,
            DarqEntryKind.Checkpoint => 16,
            DarqEntryKind.Rollback => 16,
            _ => -1,
        };
        if (minimumBody < 0)
        {
            return $"unknown entry kind {(byte)kind}";
        }

        // A flag this build does not know could change what the entry means (as the activity flag did for SELF), so it
        // is refused rather than ignored.
        ushort knownFlags = kind switch
        {
            DarqEntryKind.In => HasDedupFlag,
            DarqEntryKind.Self => ActivityFlag,
            DarqEntryKind.Ack => DiscardedFlag,
            _ => 0,
        };
        if ((flags & ~knownFlags) != 0)
        {
            return $"a {kind} entry has unknown flags 0x{flags & ~knownFlags:x4}";
        }

        return bodyLength < minimumBody ? $"a {kind} entry needs at least {minimumBody} body bytes, this one has {bodyLength}" : null;
    }

    public static ReadOnlySpan<byte> Body(ReadOnlySpan<byte> entry) => entry[HeaderSize..];

    /// <summary>The flags of an entry whose header <see cref="TryParse"/> accepted.</summary>
    public static ushort Flags(ReadOnlySpan<byte> entry) => BinaryPrimitives.ReadUInt16LittleEndian(entry[2..]);

    private static void Seal(Span<byte> entry, DarqEntryKind kind, ushort flags, long sequence)
    {
        entry[0] = Version;
        entry[1] = (byte)kind;
        BinaryPrimitives.WriteUInt16LittleEndian(entry[2..], flags);
        BinaryPrimitives.WriteInt32LittleEndian(entry[4..], entry.Length - HeaderSize);
        BinaryPrimitives.WriteInt64LittleEndian(entry[8..], sequence);
        BinaryPrimitives.WriteUInt64LittleEndian(entry[ChecksumOffset..], 0);
        BinaryPrimitives.WriteUInt64LittleEndian(entry[ChecksumOffset..], XxHash3.HashToUInt64(entry));
    }

    /// <summary>
    /// The version-2 checksum of an entry as read (its checksum field holds the stored value): XXH3 (seed 0) of the whole
    /// entry with that field taken as zero, so one pass over one span, as the writer computes it.
    /// </summary>
    private static ulong VerifiedChecksum(ReadOnlySpan<byte> entry)
    {
        if (entry.Length <= StackVerifyLimit)
        {
            Span<byte> copy = stackalloc byte[StackVerifyLimit];
            copy = copy[..entry.Length];
            entry.CopyTo(copy);
            BinaryPrimitives.WriteUInt64LittleEndian(copy[ChecksumOffset..], 0);
            return XxHash3.HashToUInt64(copy);
        }

        // The same value in three parts: XXH3 hashes a stream exactly as it hashes the same bytes in one span.
        var hash = t_hash ??= new XxHash3();
        hash.Reset();
        hash.Append(entry[..ChecksumOffset]);
        hash.Append(stackalloc byte[sizeof(ulong)]);
        hash.Append(entry[HeaderSize..]);
        return hash.GetCurrentHashAsUInt64();
    }

    /// <summary>A reusable hasher for the long entries of <see cref="VerifiedChecksum"/>, one per reading thread.</summary>
    [ThreadStatic]
    private static XxHash3? t_hash;

    /// <summary>The version-1 checksum: XxHash64 of the body, seeded with the XxHash64 of the first 16 header bytes (everything but the checksum).</summary>
    private static ulong ChecksumVersion1(ReadOnlySpan<byte> entry)
        => ShortXxHash64.Hash(entry[HeaderSize..], unchecked((long)ShortXxHash64.Hash(entry[..ChecksumOffset], 0)));
}
