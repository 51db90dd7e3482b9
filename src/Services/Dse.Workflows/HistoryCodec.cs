using System.Buffers.Binary;
using System.IO.Hashing;
using System.Text;

namespace Dse.Workflows;

/// <summary>
/// The byte form of a <see cref="HistoryEvent"/> in the workflow log. Two checksums: one over the header (which workflow,
/// run and index the event belongs to) and one over the body, so a damaged body is pinned on its workflow, and a damaged
/// header still leaves a gap in its workflow's numbering. Layout in docs/workflows.md, "History format".
/// </summary>
internal static class HistoryCodec
{
    /// <summary>The format byte every entry starts with.</summary>
    public const byte Format = 1;

    private const int PrefixBytes = 11; // format, header checksum, body checksum, header length

    /// <summary>The largest workflow id, in UTF-8 bytes.</summary>
    public const int MaxIdBytes = 1024;

    /// <summary>Encodes <paramref name="e"/>.</summary>
    public static byte[] Encode(HistoryEvent e)
    {
        int idBytes = Encoding.UTF8.GetByteCount(e.WorkflowId);
        int headerLength = 2 + idBytes + 4 + 4;
        int nameBytes = e.Name is null ? 0 : Encoding.UTF8.GetByteCount(e.Name);
        int textBytes = e.Text is null ? 0 : Encoding.UTF8.GetByteCount(e.Text);
        int bodyLength = 1 + 8 + 4 + 4 + nameBytes + 4 + textBytes + 4 + e.Data.Length;
        byte[] bytes = new byte[PrefixBytes + headerLength + bodyLength];
        var span = bytes.AsSpan();
        span[0] = Format;
        BinaryPrimitives.WriteUInt16LittleEndian(span[9..], (ushort)headerLength);

        var header = span.Slice(PrefixBytes, headerLength);
        BinaryPrimitives.WriteUInt16LittleEndian(header, (ushort)idBytes);
        Encoding.UTF8.GetBytes(e.WorkflowId, header[2..]);
        BinaryPrimitives.WriteInt32LittleEndian(header[(2 + idBytes)..], e.Run);
        BinaryPrimitives.WriteInt32LittleEndian(header[(6 + idBytes)..], e.Index);

        var body = span[(PrefixBytes + headerLength)..];
        int at = 0;
        body[at++] = (byte)e.Kind;
        BinaryPrimitives.WriteInt64LittleEndian(body[at..], e.Timestamp.UtcTicks);
        at += 8;
        BinaryPrimitives.WriteInt32LittleEndian(body[at..], e.Seq);
        at += 4;
        at = WriteString(body, at, e.Name, nameBytes);
        at = WriteString(body, at, e.Text, textBytes);
        BinaryPrimitives.WriteInt32LittleEndian(body[at..], e.Data.Length);
        at += 4;
        e.Data.Span.CopyTo(body[at..]);

        // The header checksum covers its length too, so a damaged length cannot point the decoder at the wrong bytes.
        BinaryPrimitives.WriteUInt32LittleEndian(span[1..], XxHash32.HashToUInt32(span.Slice(9, 2 + headerLength)));
        BinaryPrimitives.WriteUInt32LittleEndian(span[5..], XxHash32.HashToUInt32(body));
        return bytes;
    }

    /// <summary>Decodes one log entry; never throws on bad bytes, it says what is wrong instead.</summary>
    public static HistoryRecord Decode(ReadOnlySpan<byte> entry)
    {
        if (entry.Length < PrefixBytes)
        {
            return HistoryRecord.Unattributed($"the entry is {entry.Length} bytes, shorter than any history event");
        }

        if (entry[0] != Format)
        {
            return HistoryRecord.Unattributed($"the entry's format byte is {entry[0]}, expected {Format}");
        }

        int headerLength = BinaryPrimitives.ReadUInt16LittleEndian(entry[9..]);
        if (headerLength < 10 || PrefixBytes + headerLength > entry.Length
            || XxHash32.HashToUInt32(entry.Slice(9, 2 + headerLength)) != BinaryPrimitives.ReadUInt32LittleEndian(entry[1..]))
        {
            return HistoryRecord.Unattributed("the entry's header fails its checksum");
        }

        var header = entry.Slice(PrefixBytes, headerLength);
        int idBytes = BinaryPrimitives.ReadUInt16LittleEndian(header);
        if (2 + idBytes + 8 != headerLength)
        {
            return HistoryRecord.Unattributed("the entry's header has an inconsistent id length");
        }

        string id = Encoding.UTF8.GetString(header.Slice(2, idBytes));
        int run = BinaryPrimitives.ReadInt32LittleEndian(header[(2 + idBytes)..]);
        int index = BinaryPrimitives.ReadInt32LittleEndian(header[(6 + idBytes)..]);
        var body = entry[(PrefixBytes + headerLength)..];
        if (XxHash32.HashToUInt32(body) != BinaryPrimitives.ReadUInt32LittleEndian(entry[5..]))
        {
            return HistoryRecord.CorruptBody(id, run, index, "the event's body fails its checksum");
        }

        try
        {
            int at = 0;
            var kind = (HistoryEventKind)body[at++];
            if (!Enum.IsDefined(kind))
            {
                return HistoryRecord.CorruptBody(id, run, index, $"unknown event kind {(byte)kind}");
            }

            long ticks = BinaryPrimitives.ReadInt64LittleEndian(body[at..]);
            at += 8;
            int seq = BinaryPrimitives.ReadInt32LittleEndian(body[at..]);
            at += 4;
            string? name = ReadString(body, ref at);
            string? text = ReadString(body, ref at);
            int dataLength = BinaryPrimitives.ReadInt32LittleEndian(body[at..]);
            at += 4;
            if (dataLength < 0 || at + dataLength != body.Length || ticks < 0 || ticks > DateTimeOffset.MaxValue.UtcTicks)
            {
                return HistoryRecord.CorruptBody(id, run, index, "the event's body is malformed");
            }

            var e = new HistoryEvent(id, run, index, kind, new DateTimeOffset(ticks, TimeSpan.Zero), seq, name, text, body.Slice(at, dataLength).ToArray());
            return HistoryRecord.Valid(e);
        }
        catch (Exception ex) when (ex is ArgumentOutOfRangeException or ArgumentException or IndexOutOfRangeException)
        {
            return HistoryRecord.CorruptBody(id, run, index, "the event's body is truncated");
        }
    }

    private static int WriteString(Span<byte> body, int at, string? value, int byteCount)
    {
        BinaryPrimitives.WriteInt32LittleEndian(body[at..], value is null ? -1 : byteCount);
        at += 4;
        if (value is not null)
        {
            Encoding.UTF8.GetBytes(value, body[at..]);
            at += byteCount;
        }

        return at;
    }

    private static string? ReadString(ReadOnlySpan<byte> body, ref int at)
    {
        int length = BinaryPrimitives.ReadInt32LittleEndian(body[at..]);
        at += 4;
        if (length == -1)
        {
            return null;
        }

        if (length < 0 || at + length > body.Length)
        {
            throw new ArgumentOutOfRangeException(nameof(body));
        }

        string value = Encoding.UTF8.GetString(body.Slice(at, length));
        at += length;
        return value;
    }
}
