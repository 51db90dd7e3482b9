using System.Buffers;
using System.Buffers.Binary;
using Dse.Storage;

namespace Dse.Samples.Counter;

/// <summary>
/// The frontend of the running example: takes a client's request, records it, calls the counter, then the logging
/// service, records completion, and answers the client only once everything is recoverable (a barrier).
/// </summary>
/// <param name="options">The frontend's options.</param>
/// <param name="log">Where the frontend's snapshots go.</param>
/// <param name="counter">Resolves the counter service's current incarnation (it may restart).</param>
/// <param name="logging">Resolves the logging service's current incarnation.</param>
public sealed class Frontend(DseOptions options, SnapshotLog log, Func<CounterService> counter, Func<LoggingService> logging)
    : SnapshotStateObject(options, log)
{
    private long _started;
    private long _completed;

    /// <summary>Requests recorded as started.</summary>
    public long Started => Interlocked.Read(ref _started);

    /// <summary>Requests recorded as completed.</summary>
    public long Completed => Interlocked.Read(ref _completed);

    /// <summary>Handles one client request and returns the counter value the client sees.</summary>
    public async Task<long> HandleAsync(int requestId, CancellationToken cancellationToken = default)
    {
        // The intent is part of the frontend's state: after a crash the workflow resumes from what was recorded.
        await StartLocalActionAsync(cancellationToken);
        Interlocked.Increment(ref _started);
        var call = await DetachAsync(cancellationToken);

        // The calls run on an sthread, so persistence of the frontend is not held up while they are in flight.
        var (value, counterReply) = await counter().IncrementAsync(call.Send(), cancellationToken);
        await ReceiveOrThrowAsync(call, counterReply, cancellationToken);
        var logReply = await logging().AppendAsync(call.Send(), $"request {requestId} -> {value}", cancellationToken);
        await ReceiveOrThrowAsync(call, logReply, cancellationToken);

        if (!await MergeAsync(call, cancellationToken))
        {
            throw new DseRolledBackException($"Request {requestId} was rolled back before it completed.");
        }

        Interlocked.Increment(ref _completed);
        var reply = await DetachAsync(cancellationToken);

        // The client is outside DSE: it sees the result only once nothing it depends on can roll back.
        await reply.BarrierAsync(cancellationToken);
        return value;
    }

    /// <inheritdoc />
    protected override void WriteSnapshot(IBufferWriter<byte> writer)
    {
        var span = writer.GetSpan(16);
        BinaryPrimitives.WriteInt64LittleEndian(span, _started);
        BinaryPrimitives.WriteInt64LittleEndian(span[8..], _completed);
        writer.Advance(16);
    }

    /// <inheritdoc />
    protected override void ReadSnapshot(ReadOnlySpan<byte> snapshot)
    {
        _started = snapshot.IsEmpty ? 0 : BinaryPrimitives.ReadInt64LittleEndian(snapshot);
        _completed = snapshot.IsEmpty ? 0 : BinaryPrimitives.ReadInt64LittleEndian(snapshot[8..]);
    }

    private static async Task ReceiveOrThrowAsync(Sthread call, DseHeader reply, CancellationToken cancellationToken)
    {
        if (!await call.ReceiveAsync(reply, cancellationToken))
        {
            throw new DseRolledBackException("A reply came from rolled-back state; it was discarded.");
        }
    }
}
