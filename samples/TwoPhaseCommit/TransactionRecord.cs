using System.Buffers.Binary;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// One 2PC log record: <c>u8 kind | i64 transaction | u8 value</c>, little-endian, ten bytes. The value is the vote
/// (1 yes) or the decision (1 commit); 0 otherwise.
/// </summary>
internal readonly record struct TransactionRecord(RecordKind Kind, long Transaction, bool Value)
{
    /// <summary>The encoded size in bytes.</summary>
    public const int Size = 10;

    /// <summary>Encodes the record into <paramref name="destination"/> (at least <see cref="Size"/> bytes).</summary>
    public void WriteTo(Span<byte> destination)
    {
        destination[0] = (byte)Kind;
        BinaryPrimitives.WriteInt64LittleEndian(destination[1..], Transaction);
        destination[9] = Value ? (byte)1 : (byte)0;
    }

    /// <summary>Decodes a record written by <see cref="WriteTo"/>.</summary>
    /// <exception cref="InvalidDataException">The entry is not a 2PC record.</exception>
    public static TransactionRecord Read(ReadOnlySpan<byte> source)
    {
        if (source.Length != Size || source[0] is < (byte)RecordKind.Start or > (byte)RecordKind.Decision || source[9] > 1)
        {
            throw new InvalidDataException($"A 2PC log entry is {Size} bytes with a known kind; got {source.Length} bytes starting with {(source.IsEmpty ? -1 : source[0])}.");
        }

        return new TransactionRecord((RecordKind)source[0], BinaryPrimitives.ReadInt64LittleEndian(source[1..]), source[9] == 1);
    }

    /// <summary>Appends the record to <paramref name="log"/> (inside an action) and returns its LSN.</summary>
    public long AppendTo(Dse.Services.SpeculativeLog log)
    {
        Span<byte> bytes = stackalloc byte[Size];
        WriteTo(bytes);
        return log.Append(bytes);
    }
}
