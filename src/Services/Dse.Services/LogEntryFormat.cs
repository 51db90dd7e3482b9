using System.Buffers.Binary;
using System.IO.Hashing;

namespace Dse.Services;

/// <summary>
/// The frame every <see cref="SpeculativeLog"/> record carries inside its FasterLog entry (docs/services.md):
/// <c>u16 magic 0x4C53 ("SL") | u8 kind | u8 format (1) | u32 CRC-32 of bytes 0-3 and the payload</c>, then the payload.
/// </summary>
internal static class LogEntryFormat
{
    public const int HeaderSize = 8;
    public const ushort Magic = 0x4C53;
    public const byte FormatVersion = 1;

    /// <summary>FasterLog's own per-entry header plus this frame: what an entry costs beyond its payload, before alignment.</summary>
    public const int LogOverhead = 4 + HeaderSize;

    /// <summary>Commit record payload: version, previous commit record address, logical begin, metadata length, metadata.</summary>
    public const int CommitFixedSize = 28;

    /// <summary>Rollback marker payload: restored version, first dropped address.</summary>
    public const int RollbackSize = 16;

    /// <summary>Writes the header into the first 8 bytes of <paramref name="frame"/>, whose payload is already in place after them.</summary>
    public static void WriteHeader(Span<byte> frame, LogRecordKind kind)
    {
        BinaryPrimitives.WriteUInt16LittleEndian(frame, Magic);
        frame[2] = (byte)kind;
        frame[3] = FormatVersion;
        BinaryPrimitives.WriteUInt32LittleEndian(frame[4..], Checksum(frame));
    }

    /// <summary>Parses a frame; returns null when valid, or what is wrong with it.</summary>
    public static string? TryParse(ReadOnlySpan<byte> frame, out LogRecordKind kind, out ReadOnlySpan<byte> payload)
    {
        kind = default;
        payload = default;
        if (frame.Length < HeaderSize)
        {
            return $"the entry is {frame.Length} bytes, shorter than the {HeaderSize}-byte frame header";
        }

        if (BinaryPrimitives.ReadUInt16LittleEndian(frame) != Magic || frame[3] != FormatVersion)
        {
            return "the entry has no valid frame header (not an entry start, or overwritten)";
        }

        kind = (LogRecordKind)frame[2];
        if (kind is not (LogRecordKind.Entry or LogRecordKind.Commit or LogRecordKind.Rollback))
        {
            return $"unknown record kind {frame[2]}";
        }

        if (BinaryPrimitives.ReadUInt32LittleEndian(frame[4..]) != Checksum(frame))
        {
            return "the checksum does not match the contents";
        }

        payload = frame[HeaderSize..];
        return null;
    }

    public static byte[] Commit(long version, long previousCommit, long logicalBegin, ReadOnlySpan<byte> metadata)
    {
        var frame = new byte[HeaderSize + CommitFixedSize + metadata.Length];
        var p = frame.AsSpan(HeaderSize);
        BinaryPrimitives.WriteInt64LittleEndian(p, version);
        BinaryPrimitives.WriteInt64LittleEndian(p[8..], previousCommit);
        BinaryPrimitives.WriteInt64LittleEndian(p[16..], logicalBegin);
        BinaryPrimitives.WriteInt32LittleEndian(p[24..], metadata.Length);
        metadata.CopyTo(p[CommitFixedSize..]);
        WriteHeader(frame, LogRecordKind.Commit);
        return frame;
    }

    public static byte[] Rollback(long version, long dropFrom)
    {
        var frame = new byte[HeaderSize + RollbackSize];
        BinaryPrimitives.WriteInt64LittleEndian(frame.AsSpan(HeaderSize), version);
        BinaryPrimitives.WriteInt64LittleEndian(frame.AsSpan(HeaderSize + 8), dropFrom);
        WriteHeader(frame, LogRecordKind.Rollback);
        return frame;
    }

    /// <summary>Reads the version of a commit record's or rollback marker's payload.</summary>
    public static long ReadVersion(ReadOnlySpan<byte> payload) =>
        payload.Length >= 8 ? BinaryPrimitives.ReadInt64LittleEndian(payload) : -1;

    private static uint Checksum(ReadOnlySpan<byte> frame)
    {
        var crc = new Crc32();
        crc.Append(frame[..4]);
        crc.Append(frame[HeaderSize..]);
        return crc.GetCurrentHashAsUInt32();
    }
}
