using System.Buffers.Binary;
using System.IO.Hashing;
using System.Numerics;
using System.Runtime.CompilerServices;

namespace Dse.Darq;

/// <summary>
/// XXH64 (the same values as <see cref="XxHash64.HashToUInt64(ReadOnlySpan{byte}, long)"/>), computed inline for inputs
/// under 32 bytes, as the checksums of version-1 entries need: every entry header and small bodies such as a completion
/// record's. Those take the algorithm's short path (no stripes), which costs a few multiplications here but a call
/// through the library's general state machine there. Longer inputs go to the library. Entries are written in version 2
/// now (XXH3); this reads the logs earlier builds wrote.
/// </summary>
internal static class ShortXxHash64
{
    private const ulong Prime1 = 0x9E3779B185EBCA87UL;
    private const ulong Prime2 = 0xC2B2AE3D27D4EB4FUL;
    private const ulong Prime3 = 0x165667B19E3779F9UL;
    private const ulong Prime4 = 0x85EBCA77C2B2AE63UL;
    private const ulong Prime5 = 0x27D4EB2F165667C5UL;

    /// <summary>The XXH64 of <paramref name="data"/> with <paramref name="seed"/>.</summary>
    public static ulong Hash(ReadOnlySpan<byte> data, long seed)
    {
        if (data.Length >= 32)
        {
            return XxHash64.HashToUInt64(data, seed);
        }

        ulong hash = unchecked((ulong)seed + Prime5 + (ulong)data.Length);
        int offset = 0;
        for (; offset + 8 <= data.Length; offset += 8)
        {
            hash ^= Round(BinaryPrimitives.ReadUInt64LittleEndian(data[offset..]));
            hash = unchecked((BitOperations.RotateLeft(hash, 27) * Prime1) + Prime4);
        }

        if (offset + 4 <= data.Length)
        {
            hash ^= unchecked(BinaryPrimitives.ReadUInt32LittleEndian(data[offset..]) * Prime1);
            hash = unchecked((BitOperations.RotateLeft(hash, 23) * Prime2) + Prime3);
            offset += 4;
        }

        for (; offset < data.Length; offset++)
        {
            hash ^= unchecked(data[offset] * Prime5);
            hash = unchecked(BitOperations.RotateLeft(hash, 11) * Prime1);
        }

        hash ^= hash >> 33;
        hash = unchecked(hash * Prime2);
        hash ^= hash >> 29;
        hash = unchecked(hash * Prime3);
        hash ^= hash >> 32;
        return hash;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static ulong Round(ulong input) => unchecked(BitOperations.RotateLeft(input * Prime2, 31) * Prime1);
}
