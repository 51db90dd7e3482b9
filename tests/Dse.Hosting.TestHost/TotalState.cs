using System.Buffers;
using System.Buffers.Binary;
using Dse.Storage;

namespace Dse.Hosting.TestHost;

/// <summary>A StateObject holding one running total, persisted as an 8-byte snapshot per version.</summary>
internal abstract class TotalState(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    private long _total;

    /// <summary>The total; read it inside an action, or while nothing acts (before traffic starts).</summary>
    public long Total => Interlocked.Read(ref _total);

    /// <summary>Adds <paramref name="amount"/> inside an action and returns the new total.</summary>
    public long Add(long amount) => Interlocked.Add(ref _total, amount);

    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
        BinaryPrimitives.WriteInt64LittleEndian(writer.GetSpan(8), Total);
        writer.Advance(8);
    }

    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot) =>
        Interlocked.Exchange(ref _total, snapshot.IsEmpty ? 0 : BinaryPrimitives.ReadInt64LittleEndian(snapshot));
}
