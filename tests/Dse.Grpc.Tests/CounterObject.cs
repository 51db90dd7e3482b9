using System.Buffers;
using System.Buffers.Binary;
using Dse.Storage;

namespace Dse.Grpc.Tests;

/// <summary>A counter StateObject persisted as snapshots: the state of a relay node.</summary>
public sealed class CounterObject(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    private long _value;

    public long Value => Interlocked.Read(ref _value);

    /// <summary>Adds inside an action; returns the new value.</summary>
    public long Add(long amount) => Interlocked.Add(ref _value, amount);

    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
        BinaryPrimitives.WriteInt64LittleEndian(writer.GetSpan(8), _value);
        writer.Advance(8);
    }

    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot) =>
        _value = snapshot.IsEmpty ? 0 : BinaryPrimitives.ReadInt64LittleEndian(snapshot);

    protected override async ValueTask DisposeAsyncCore()
    {
        await base.DisposeAsyncCore();
        await Log.DisposeAsync();
    }
}
