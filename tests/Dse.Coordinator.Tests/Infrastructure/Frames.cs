using System.Buffers.Binary;
using System.IO.Hashing;
using System.Text;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>Encodes records as docs/coordinator-log-format.md specifies, independently of the library's encoder.</summary>
public static class Frames
{
    public const int HeaderSize = 16;

    /// <summary>The magic's bytes on disk: ASCII "DSEc".</summary>
    public static ReadOnlySpan<byte> MagicBytes => "DSEc"u8;

    public static byte[] Encode(ReadOnlySpan<byte> payload)
    {
        byte[] frame = new byte[HeaderSize + payload.Length];
        MagicBytes.CopyTo(frame);
        BinaryPrimitives.WriteUInt32LittleEndian(frame.AsSpan(4), (uint)payload.Length);
        BinaryPrimitives.WriteUInt64LittleEndian(frame.AsSpan(8), XxHash64.HashToUInt64(payload));
        payload.CopyTo(frame.AsSpan(HeaderSize));
        return frame;
    }

    public static byte[] Encode(string payload) => Encode(Encoding.UTF8.GetBytes(payload));

    public static byte[] Concat(params byte[][] frames) => [.. frames.SelectMany(frame => frame)];

    public static string Text(ReadOnlyMemory<byte> record) => Encoding.UTF8.GetString(record.Span);

    public static string[] Texts(IReadOnlyList<ReadOnlyMemory<byte>> records) => [.. records.Select(Text)];

    public static byte[] Bytes(string text) => Encoding.UTF8.GetBytes(text);
}
