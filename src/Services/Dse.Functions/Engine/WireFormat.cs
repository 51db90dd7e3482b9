using MemoryPack;

namespace Dse.Functions.Engine;

/// <summary>
/// How arguments, results, keys and states become bytes: MemoryPack, with <see cref="Unit"/> as no bytes. Every value
/// crossing a call is copied this way, so a callee never shares an object with its caller.
/// </summary>
internal static class WireFormat
{
    public static readonly byte[] Empty = [];

    public static byte[] Encode<T>(T value) =>
        typeof(T) == typeof(Unit) ? Empty : MemoryPackSerializer.Serialize(value);

    public static T Decode<T>(ReadOnlySpan<byte> bytes)
    {
        if (typeof(T) == typeof(Unit))
        {
            return default!;
        }

        return MemoryPackSerializer.Deserialize<T>(bytes)!;
    }

    /// <summary>Decodes call arguments; bytes that do not parse into <typeparamref name="T"/> are an <see cref="EntityArgumentException"/>.</summary>
    public static T DecodeArgs<T>(ReadOnlyMemory<byte> bytes, string method)
    {
        if (typeof(T) == typeof(Unit))
        {
            return bytes.IsEmpty
                ? default!
                : throw new EntityArgumentException($"Method {method} takes no arguments, but {bytes.Length} bytes of arguments came with the call.");
        }

        try
        {
            return MemoryPackSerializer.Deserialize<T>(bytes.Span)!;
        }
        catch (Exception e) when (e is MemoryPackSerializationException or ArgumentException or InvalidOperationException or IndexOutOfRangeException or OverflowException)
        {
            throw new EntityArgumentException(
                $"The arguments of {method} ({bytes.Length} bytes) do not deserialize as {typeof(T).Name}: {e.Message}", e);
        }
    }
}
