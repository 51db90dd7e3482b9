using System.Buffers.Binary;

namespace Dse.Darq.TestHost;

/// <summary>
/// The running-sum processor's state, kept in one SELF message: how many messages it consumed, their sum, how many
/// values it saw a second time, and a bitmap of the values seen (1..<see cref="Count"/>'s bound), so that a lost or
/// duplicated message shows up by value, not only in the totals.
/// </summary>
internal sealed class SumState
{
    private const int HeaderSize = 32;
    private readonly byte[] _seen;

    public SumState(long bound)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(bound);
        Bound = bound;
        _seen = new byte[(bound / 8) + 1];
    }

    /// <summary>The largest value the state can record.</summary>
    public long Bound { get; }

    /// <summary>Messages consumed.</summary>
    public long Count { get; private set; }

    /// <summary>Sum of the consumed values.</summary>
    public long Sum { get; private set; }

    /// <summary>Values consumed more than once (must stay 0).</summary>
    public long Duplicates { get; private set; }

    /// <summary>Values in 1..<see cref="Bound"/> not consumed yet.</summary>
    public long Missing
    {
        get
        {
            long missing = 0;
            for (long value = 1; value <= Bound; value++)
            {
                missing += Seen(value) ? 0 : 1;
            }

            return missing;
        }
    }

    /// <summary>Whether <paramref name="value"/> was consumed.</summary>
    public bool Seen(long value) => (_seen[value / 8] & (1 << (int)(value % 8))) != 0;

    /// <summary>Consumes one value.</summary>
    public void Apply(long value)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(value, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(value, Bound);
        if (Seen(value))
        {
            Duplicates++;
        }

        _seen[value / 8] |= (byte)(1 << (int)(value % 8));
        Count++;
        Sum += value;
    }

    public byte[] Encode()
    {
        var bytes = new byte[HeaderSize + _seen.Length];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, Bound);
        BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(8), Count);
        BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(16), Sum);
        BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(24), Duplicates);
        _seen.CopyTo(bytes, HeaderSize);
        return bytes;
    }

    /// <exception cref="InvalidDataException">The bytes are not a state of this shape.</exception>
    public static SumState Decode(ReadOnlySpan<byte> bytes)
    {
        if (bytes.Length < HeaderSize)
        {
            throw new InvalidDataException($"A sum state has at least {HeaderSize} bytes; this one has {bytes.Length}.");
        }

        var state = new SumState(BinaryPrimitives.ReadInt64LittleEndian(bytes));
        if (bytes.Length != HeaderSize + state._seen.Length)
        {
            throw new InvalidDataException($"A sum state for bound {state.Bound} has {HeaderSize + state._seen.Length} bytes; this one has {bytes.Length}.");
        }

        state.Count = BinaryPrimitives.ReadInt64LittleEndian(bytes[8..]);
        state.Sum = BinaryPrimitives.ReadInt64LittleEndian(bytes[16..]);
        state.Duplicates = BinaryPrimitives.ReadInt64LittleEndian(bytes[24..]);
        bytes[HeaderSize..].CopyTo(state._seen);
        return state;
    }
}
