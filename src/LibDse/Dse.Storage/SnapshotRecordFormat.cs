using System.Buffers.Binary;
using System.IO.Hashing;

namespace Dse.Storage;

/// <summary>The on-device layout of a <see cref="SnapshotLog"/> record; docs/storage-format.md is the specification.</summary>
internal static class SnapshotRecordFormat
{
    /// <summary>"DSEs" in ASCII, read as a little-endian 32-bit integer.</summary>
    public const uint Magic = 0x7345_5344;

    public const ushort Version = 1;

    public const int HeaderSize = 64;

    /// <summary>The format's hard limit on a payload (1 GiB); options may set a lower one for appends.</summary>
    public const int MaxPayloadLength = 1 << 30;

    private const int HashedHeaderBytes = 56;

    /// <summary>Bytes a record occupies on the device: header plus payload, rounded up to the sector size.</summary>
    public static long RecordLength(int payloadLength, int sectorSize)
        => (HeaderSize + (long)payloadLength + sectorSize - 1) / sectorSize * sectorSize;

    /// <summary>Fills the header in front of a payload already placed at <c>record[HeaderSize..]</c>.</summary>
    public static void WriteHeader(Span<byte> record, SnapshotRecordKind kind, ulong key, ulong sequence, long address, int payloadLength)
    {
        var header = record[..HeaderSize];
        header.Clear();
        BinaryPrimitives.WriteUInt32LittleEndian(header, Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(header[4..], Version);
        header[6] = (byte)kind;
        BinaryPrimitives.WriteInt32LittleEndian(header[8..], payloadLength);
        BinaryPrimitives.WriteUInt64LittleEndian(header[16..], key);
        BinaryPrimitives.WriteUInt64LittleEndian(header[24..], sequence);
        BinaryPrimitives.WriteInt64LittleEndian(header[32..], address);
        BinaryPrimitives.WriteUInt64LittleEndian(header[40..], XxHash64.HashToUInt64(record.Slice(HeaderSize, payloadLength)));
        BinaryPrimitives.WriteUInt64LittleEndian(header[56..], XxHash64.HashToUInt64(header[..HashedHeaderBytes]));
    }

    /// <summary>
    /// Classifies the first sector at a scan position: <see cref="HeaderStatus.Empty"/> (zeros: the end of the log),
    /// <see cref="HeaderStatus.Valid"/> (a header for exactly this address and sequence) or <see cref="HeaderStatus.Invalid"/>.
    /// </summary>
    public static HeaderStatus ParseHeader(ReadOnlySpan<byte> sector, long expectedAddress, ulong expectedSequence,
        out RecordHeader header, out string problem)
    {
        header = default;
        problem = string.Empty;
        if (sector.Length < HeaderSize || !sector[..HeaderSize].ContainsAnyExcept((byte)0))
        {
            return HeaderStatus.Empty;
        }

        uint magic = BinaryPrimitives.ReadUInt32LittleEndian(sector);
        if (magic != Magic)
        {
            problem = $"bad magic 0x{magic:X8}, expected 0x{Magic:X8}";
            return HeaderStatus.Invalid;
        }

        ulong storedHash = BinaryPrimitives.ReadUInt64LittleEndian(sector[56..]);
        if (storedHash != XxHash64.HashToUInt64(sector[..HashedHeaderBytes]))
        {
            problem = "header checksum mismatch";
            return HeaderStatus.Invalid;
        }

        ushort version = BinaryPrimitives.ReadUInt16LittleEndian(sector[4..]);
        if (version != Version)
        {
            problem = $"unsupported format version {version} (this build reads version {Version})";
            return HeaderStatus.Invalid;
        }

        var kind = (SnapshotRecordKind)sector[6];
        if (kind is not (SnapshotRecordKind.Data or SnapshotRecordKind.DropAfter or SnapshotRecordKind.TruncateBefore))
        {
            problem = $"unknown record kind {(byte)kind}";
            return HeaderStatus.Invalid;
        }

        int payloadLength = BinaryPrimitives.ReadInt32LittleEndian(sector[8..]);
        if (payloadLength is < 0 or > MaxPayloadLength)
        {
            problem = $"payload length {payloadLength} outside [0, {MaxPayloadLength}]";
            return HeaderStatus.Invalid;
        }

        ulong key = BinaryPrimitives.ReadUInt64LittleEndian(sector[16..]);
        ulong sequence = BinaryPrimitives.ReadUInt64LittleEndian(sector[24..]);
        long address = BinaryPrimitives.ReadInt64LittleEndian(sector[32..]);
        if (address != expectedAddress || sequence != expectedSequence)
        {
            problem = $"header belongs to address {address} and sequence {sequence}, expected address {expectedAddress} and sequence {expectedSequence}";
            return HeaderStatus.Invalid;
        }

        header = new RecordHeader(kind, key, sequence, address, payloadLength, BinaryPrimitives.ReadUInt64LittleEndian(sector[40..]));
        return HeaderStatus.Valid;
    }

    /// <summary>Whether a payload matches the checksum in its header.</summary>
    public static bool PayloadMatches(in RecordHeader header, ReadOnlySpan<byte> payload)
        => XxHash64.HashToUInt64(payload) == header.PayloadHash;

    internal enum HeaderStatus
    {
        Empty,
        Valid,
        Invalid,
    }

    /// <summary>A decoded, checksum-verified header.</summary>
    internal readonly record struct RecordHeader(SnapshotRecordKind Kind, ulong Key, ulong Sequence, long Address, int PayloadLength, ulong PayloadHash);
}
