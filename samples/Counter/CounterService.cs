using System.Buffers;
using System.Buffers.Binary;
using Dse.Storage;

namespace Dse.Samples.Counter;

/// <summary>The counter service of the paper's running example: one number, incremented by requests.</summary>
public sealed class CounterService(DseOptions options, SnapshotLog log) : SnapshotStateObject(options, log)
{
    private long _value;

    /// <summary>The current (possibly speculative) value.</summary>
    public long Value => Interlocked.Read(ref _value);

    /// <summary>Handles an increment request carrying <paramref name="request"/>; returns the new value and the reply header.</summary>
    /// <exception cref="DseRolledBackException">The request came from rolled-back state and was discarded.</exception>
    public async Task<(long Value, DseHeader Reply)> IncrementAsync(DseHeader request, CancellationToken cancellationToken = default)
    {
        if (!await StartActionAsync(request, cancellationToken))
        {
            throw new DseRolledBackException("The increment request came from state that was, or is being, rolled back; it was discarded.");
        }

        long value = Interlocked.Increment(ref _value);
        var reply = await EndActionAsync(cancellationToken);
        return (value, reply);
    }

    /// <inheritdoc />
    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
        BinaryPrimitives.WriteInt64LittleEndian(writer.GetSpan(8), _value);
        writer.Advance(8);
    }

    /// <inheritdoc />
    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot) =>
        _value = snapshot.IsEmpty ? 0 : BinaryPrimitives.ReadInt64LittleEndian(snapshot);
}
