using System.Buffers;
using System.Buffers.Binary;
using Dse.Storage;

namespace Dse.Hosting.Tests;

/// <summary>A StateObject holding one counter, persisted as an 8-byte snapshot per version in a <see cref="SnapshotLog"/>.</summary>
internal sealed class CounterStateObject(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    private long _value;

    public long Value => Interlocked.Read(ref _value);

    /// <summary>Increments the counter in one action and returns the version the action belongs to.</summary>
    public async Task<long> IncrementAsync()
    {
        await StartLocalActionAsync();
        Interlocked.Increment(ref _value);
        return EndAction().Origin.Version;
    }

    /// <summary>Adds <paramref name="amount"/> inside an action the caller holds (an intercepted call's); returns the new value.</summary>
    public long AddInAction(long amount) => Interlocked.Add(ref _value, amount);

    /// <summary>Increments the counter, persists its version and waits until the version committed; returns the version.</summary>
    public async Task<long> IncrementAndCommitAsync()
    {
        long version = await IncrementAsync();
        await AdvanceVersionAsync();
        await WaitForCommitAsync(version, WorldLine);
        return version;
    }

    /// <summary>Waits until the StateObject faulted; the fault also completes the view-change signal.</summary>
    public async Task<Exception> WaitForFaultAsync()
    {
        while (Fault is null)
        {
            await WaitForViewChangeAsync(ClusterView.Epoch);
        }

        return Fault;
    }

    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
        BinaryPrimitives.WriteInt64LittleEndian(writer.GetSpan(8), Value);
        writer.Advance(8);
    }

    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot) =>
        Interlocked.Exchange(ref _value, snapshot.IsEmpty ? 0 : BinaryPrimitives.ReadInt64LittleEndian(snapshot));
}
