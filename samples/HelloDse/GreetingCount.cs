using System.Buffers;
using System.Buffers.Binary;
using Dse.Storage;

namespace Dse.Samples.HelloDse;

/// <summary>The Greeter service's state: how many greetings it has sent. Persisted like <see cref="VisitBook"/>.</summary>
public sealed class GreetingCount(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    private long _greetings;

    /// <summary>Counts one greeting and returns the total. Call it inside an action.</summary>
    public long Increment() => Interlocked.Increment(ref _greetings);

    /// <inheritdoc />
    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
        BinaryPrimitives.WriteInt64LittleEndian(writer.GetSpan(8), _greetings);
        writer.Advance(8);
    }

    /// <inheritdoc />
    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot) =>
        _greetings = snapshot.IsEmpty ? 0 : BinaryPrimitives.ReadInt64LittleEndian(snapshot);
}
