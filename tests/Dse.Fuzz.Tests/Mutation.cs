using System.Buffers.Binary;

namespace Dse.Fuzz.Tests;

/// <summary>One change to an encoding; positions wrap around its length, so any mutation applies to any input.</summary>
internal readonly record struct Mutation(MutationKind Kind, int At, int Length, long Value)
{
    private static readonly byte[] s_boundaryBytes = [0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFE, 0xFF];

    private static readonly long[] s_boundaryIntegers =
    [
        0, 1, 2, -1, -2, 127, 128, 255, 256, short.MaxValue, short.MinValue, ushort.MaxValue, 65_536, 65_537,
        int.MaxValue, int.MinValue, uint.MaxValue, 1L << 30, (1L << 30) + 1, 1L << 32, long.MaxValue, long.MinValue,
        long.MaxValue - 1, 4_194_288, 4_194_289,
    ];

    /// <summary>The mutated copy of <paramref name="input"/>.</summary>
    public byte[] ApplyTo(byte[] input, IReadOnlyList<byte[]> donors)
    {
        int at = input.Length == 0 ? 0 : (int)((uint)At % (uint)input.Length);
        int length = Math.Max(1, Length);
        switch (Kind)
        {
            case MutationKind.FlipBit when input.Length > 0:
            {
                var copy = (byte[])input.Clone();
                copy[at] ^= (byte)(1 << (int)((ulong)Value % 8));
                return copy;
            }

            case MutationKind.SetByte when input.Length > 0:
            {
                var copy = (byte[])input.Clone();
                copy[at] = s_boundaryBytes[(int)((ulong)Value % (ulong)s_boundaryBytes.Length)];
                return copy;
            }

            case MutationKind.BoundaryInteger when input.Length > 0:
            {
                var copy = (byte[])input.Clone();
                int width = 1 << (int)((uint)Length % 4);
                long value = s_boundaryIntegers[(int)((ulong)Value % (ulong)s_boundaryIntegers.Length)];
                Span<byte> bytes = stackalloc byte[8];
                BinaryPrimitives.WriteInt64LittleEndian(bytes, value);
                int n = Math.Min(width, copy.Length - at);
                bytes[..n].CopyTo(copy.AsSpan(at));
                return copy;
            }

            case MutationKind.Truncate:
                return input.AsSpan(0, input.Length == 0 ? 0 : (int)((uint)At % (uint)input.Length)).ToArray();

            case MutationKind.Extend:
            {
                var tail = new byte[length];
                switch ((ulong)Value % 3)
                {
                    case 1:
                        new Random((int)Value).NextBytes(tail);
                        break;
                    case 2:
                        for (int i = 0; i < tail.Length && input.Length > 0; i++)
                        {
                            tail[i] = input[i % input.Length];
                        }

                        break;
                }

                return [.. input, .. tail];
            }

            case MutationKind.Delete when input.Length > 0:
            {
                int n = Math.Min(length, input.Length - at);
                return [.. input.AsSpan(0, at), .. input.AsSpan(at + n)];
            }

            case MutationKind.Insert:
            {
                var inserted = new byte[length];
                new Random((int)Value).NextBytes(inserted);
                return [.. input.AsSpan(0, at), .. inserted, .. input.AsSpan(at)];
            }

            case MutationKind.SpliceOver or MutationKind.SpliceIn:
            {
                var donor = donors.Count == 0 ? input : donors[(int)((ulong)Value % (ulong)donors.Count)];
                if (donor.Length == 0)
                {
                    return input;
                }

                int from = (int)((ulong)(Value >> 8) % (ulong)donor.Length);
                int n = Math.Min(length, donor.Length - from);
                var slice = donor.AsSpan(from, n);
                if (Kind == MutationKind.SpliceIn)
                {
                    return [.. input.AsSpan(0, at), .. slice, .. input.AsSpan(at)];
                }

                var copy = (byte[])input.Clone();
                slice[..Math.Min(n, copy.Length - at)].CopyTo(copy.AsSpan(at));
                return copy;
            }

            default:
                return input;
        }
    }

    /// <summary>A random mutation, most of them small (a bit, a byte, an integer), some structural.</summary>
    public static Mutation Next(Random random) => new(
        (MutationKind)random.Next(Enum.GetValues<MutationKind>().Length),
        random.Next(),
        random.Next(4) == 0 ? random.Next(1, 4096) : random.Next(1, 32),
        random.NextInt64());
}
