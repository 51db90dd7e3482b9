using System.Buffers.Binary;
using System.IO.Hashing;

namespace Dse.Coordinator;

/// <summary>The framing of coordinator log records; docs/coordinator-log-format.md is the specification.</summary>
internal static class CoordinatorLogFormat
{
    /// <summary>"DSEc" in ASCII, read as a little-endian 32-bit integer.</summary>
    public const uint Magic = 0x6345_5344;

    /// <summary>Magic (4), payload length (4), payload XxHash64 (8).</summary>
    public const int HeaderSize = 16;

    public const int MaxPayloadLength = ICoordinatorLog.MaxRecordLength;

    /// <summary>Throws the documented <see cref="ArgumentException"/> for a record the format cannot hold.</summary>
    public static void ValidateRecord(ReadOnlyMemory<byte> record, string paramName)
    {
        if (record.Length > MaxPayloadLength)
        {
            throw new ArgumentException(
                $"A coordinator log record is at most {MaxPayloadLength} bytes (ICoordinatorLog.MaxRecordLength); this one has {record.Length}.",
                paramName);
        }
    }

    /// <summary>Writes header and payload into <paramref name="frame"/>, which is exactly <c>HeaderSize + payload.Length</c> bytes.</summary>
    public static void WriteFrame(ReadOnlySpan<byte> payload, Span<byte> frame)
    {
        BinaryPrimitives.WriteUInt32LittleEndian(frame, Magic);
        BinaryPrimitives.WriteUInt32LittleEndian(frame[4..], (uint)payload.Length);
        BinaryPrimitives.WriteUInt64LittleEndian(frame[8..], XxHash64.HashToUInt64(payload));
        payload.CopyTo(frame[HeaderSize..]);
    }

    /// <summary>
    /// Reads every valid record of a log image, in order. The invalid bytes at the end of the image are a torn tail
    /// (reported in <see cref="ScanResult.TornTail"/>) when <paramref name="tolerateTornTail"/> is set and they look like
    /// one interrupted append with no valid record after them; anything else is an <see cref="InvalidDataException"/>.
    /// </summary>
    /// <param name="image">The whole log; the returned records are slices of it.</param>
    /// <param name="description">Names the log in exception messages.</param>
    /// <param name="tolerateTornTail">Whether the storage can leave a torn tail at all (a file can, an append blob cannot).</param>
    public static ScanResult Scan(ReadOnlyMemory<byte> image, string description, bool tolerateTornTail)
    {
        var records = new List<ReadOnlyMemory<byte>>();
        var span = image.Span;
        int offset = 0;
        while (offset < span.Length)
        {
            if (TryReadRecord(span, offset, out int payloadLength, out string problem))
            {
                records.Add(image.Slice(offset + HeaderSize, payloadLength));
                offset += HeaderSize + payloadLength;
                continue;
            }

            int remaining = span.Length - offset;
            int next = FindValidRecord(span, offset + 1);
            if (next >= 0)
            {
                throw new InvalidDataException(
                    $"Coordinator log {description} is corrupt at offset {offset} ({problem}), and a valid record follows at offset {next}; " +
                    "refusing to drop the records after the damage.");
            }

            if (!tolerateTornTail)
            {
                throw new InvalidDataException(
                    $"Coordinator log {description} is corrupt at offset {offset} ({problem}); {remaining} bytes from there on are not valid records. " +
                    "Appends to this storage are atomic, so this is damage, not an interrupted append.");
            }

            if (!LooksLikeInterruptedAppend(span[offset..]))
            {
                throw new InvalidDataException(
                    $"Coordinator log {description} is corrupt at offset {offset} ({problem}); the {remaining} bytes from there on are not " +
                    "one interrupted append (the last record), so truncating them could drop a durable record.");
            }

            return new ScanResult(records, offset, new TornTail(offset, remaining, problem));
        }

        return new ScanResult(records, offset, null);
    }

    /// <summary>Whether a complete, checksum-valid record starts at <paramref name="offset"/>.</summary>
    private static bool TryReadRecord(ReadOnlySpan<byte> image, int offset, out int payloadLength, out string problem)
    {
        payloadLength = 0;
        var rest = image[offset..];
        if (rest.Length < HeaderSize)
        {
            problem = $"an incomplete header of {rest.Length} bytes";
            return false;
        }

        uint magic = BinaryPrimitives.ReadUInt32LittleEndian(rest);
        if (magic != Magic)
        {
            problem = $"bad magic 0x{magic:X8}, expected 0x{Magic:X8}";
            return false;
        }

        uint length = BinaryPrimitives.ReadUInt32LittleEndian(rest[4..]);
        if (length > MaxPayloadLength)
        {
            problem = $"payload length {length} exceeds the maximum {MaxPayloadLength}";
            return false;
        }

        if (length > rest.Length - HeaderSize)
        {
            problem = $"an incomplete payload: {rest.Length - HeaderSize} of {length} bytes present";
            return false;
        }

        ulong stored = BinaryPrimitives.ReadUInt64LittleEndian(rest[8..]);
        ulong actual = XxHash64.HashToUInt64(rest.Slice(HeaderSize, (int)length));
        if (stored != actual)
        {
            problem = $"payload checksum 0x{actual:X16} does not match the stored 0x{stored:X16}";
            return false;
        }

        payloadLength = (int)length;
        problem = string.Empty;
        return true;
    }

    /// <summary>The first offset at or after <paramref name="start"/> where a valid record begins, or -1.</summary>
    private static int FindValidRecord(ReadOnlySpan<byte> image, int start)
    {
        Span<byte> magic = stackalloc byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(magic, Magic);
        int offset = start;
        while (offset < image.Length)
        {
            int found = image[offset..].IndexOf(magic);
            if (found < 0)
            {
                return -1;
            }

            offset += found;
            if (TryReadRecord(image, offset, out _, out _))
            {
                return offset;
            }

            offset++;
        }

        return -1;
    }

    /// <summary>
    /// Whether the invalid tail can be one append that did not finish: a header cut short, a record whose frame
    /// reaches or passes the end of the image, or zeros (a file system that grew the file before the data landed).
    /// </summary>
    private static bool LooksLikeInterruptedAppend(ReadOnlySpan<byte> tail)
    {
        if (tail.Length < HeaderSize || !tail.ContainsAnyExcept((byte)0))
        {
            return true;
        }

        uint magic = BinaryPrimitives.ReadUInt32LittleEndian(tail);
        uint length = BinaryPrimitives.ReadUInt32LittleEndian(tail[4..]);
        return magic == Magic && length <= MaxPayloadLength && HeaderSize + (long)length >= tail.Length;
    }

    /// <summary>The records of a scanned image and where the valid part ends.</summary>
    internal sealed record ScanResult(IReadOnlyList<ReadOnlyMemory<byte>> Records, int ValidLength, TornTail? TornTail);

    /// <summary>Invalid bytes at the end of a log that an interrupted append explains.</summary>
    internal sealed record TornTail(int Offset, int Length, string Problem);
}
