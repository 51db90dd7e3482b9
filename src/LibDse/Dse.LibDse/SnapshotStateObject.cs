using System.Buffers;
using System.Buffers.Binary;
using Dse.Storage;

namespace Dse;

/// <summary>
/// A StateObject that persists its whole state as one snapshot per version in a <see cref="SnapshotLog"/> on any
/// storage device: subclasses only say how to write and read a snapshot. Rollback appends a durable drop marker, so a
/// rolled-back version is never listed again, even after a crash.
/// </summary>
/// <remarks>
/// Record payload: a 4-byte little-endian metadata length, the runtime metadata, then the subclass's snapshot bytes
/// (see <c>docs/storage-format.md</c>). The log is owned by the caller, who may reopen it in a new instance after a crash.
/// </remarks>
public abstract class SnapshotStateObject : StateObject
{
    private readonly SnapshotLog _log;

    /// <summary>Creates the StateObject over an opened log.</summary>
    protected SnapshotStateObject(DseOptions options, SnapshotLog log)
        : base(options)
    {
        ArgumentNullException.ThrowIfNull(log);
        _log = log;
    }

    /// <summary>The log the snapshots go to.</summary>
    protected SnapshotLog Log => _log;

    /// <summary>Writes the current state. Called with no action running; the state must not change meanwhile.</summary>
    protected abstract void WriteSnapshot(IBufferWriter<byte> writer);

    /// <summary>Replaces the state with a snapshot; an empty span means the initial, empty state (version 0).</summary>
    protected abstract void ReadSnapshot(ReadOnlySpan<byte> snapshot);

    /// <inheritdoc />
    protected sealed override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
    {
        var buffer = new ArrayBufferWriter<byte>(256);
        BinaryPrimitives.WriteInt32LittleEndian(buffer.GetSpan(4), metadata.Length);
        buffer.Advance(4);
        buffer.Write(metadata.Span);
        WriteSnapshot(buffer);

        // The log copies the payload before returning, so the state is captured when Persist returns.
        var append = _log.AppendAsync((ulong)version, buffer.WrittenSpan);
        if (append.IsCompletedSuccessfully)
        {
            completion.SetDurable();
        }
        else
        {
            _ = CompleteWhenDurableAsync(append, completion);
        }
    }

    /// <inheritdoc />
    protected sealed override async ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken)
    {
        // Make the rollback durable first: nothing after the restored version may be listed again.
        await _log.DropAfterAsync((ulong)version, cancellationToken).ConfigureAwait(false);
        if (version == 0)
        {
            ReadSnapshot([]);
            return ReadOnlyMemory<byte>.Empty;
        }

        var records = _log.Records;
        for (int i = records.Count - 1; i >= 0; i--)
        {
            if (records[i].Key == (ulong)version)
            {
                var (meta, snapshot) = Split(records[i]);
                ReadSnapshot(snapshot.Span);
                return meta;
            }
        }

        throw new InvalidOperationException($"StateObject {Id}: version {version} is not in its snapshot log; the log holds {string.Join(", ", records.Select(r => r.Key))}.");
    }

    /// <inheritdoc />
    protected sealed override void Prune(long version)
    {
        var truncate = _log.TruncateBeforeAsync((ulong)version + 1);
        if (!truncate.IsCompletedSuccessfully)
        {
            _ = ObservePruneAsync(truncate, version);
        }
    }

    /// <inheritdoc />
    protected sealed override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken)
    {
        var records = _log.Records;
        var versions = new List<PersistedVersion>(records.Count);
        foreach (var record in records)
        {
            versions.Add(new PersistedVersion((long)record.Key, Split(record).Metadata));
        }

        return ValueTask.FromResult<IReadOnlyList<PersistedVersion>>(versions);
    }

    private (ReadOnlyMemory<byte> Metadata, ReadOnlyMemory<byte> Snapshot) Split(SnapshotRecord record)
    {
        var payload = record.Payload;
        if (payload.Length < 4)
        {
            throw new InvalidDataException($"StateObject {Id}: snapshot record of version {record.Key} at address {record.Address} is {payload.Length} bytes, too short for its metadata length.");
        }

        int metaLength = BinaryPrimitives.ReadInt32LittleEndian(payload.Span);
        if (metaLength < 0 || metaLength > payload.Length - 4)
        {
            throw new InvalidDataException($"StateObject {Id}: snapshot record of version {record.Key} at address {record.Address} claims {metaLength} metadata bytes but has {payload.Length - 4}.");
        }

        return (payload.Slice(4, metaLength), payload[(4 + metaLength)..]);
    }

    private static async Task CompleteWhenDurableAsync(ValueTask append, PersistCompletion completion)
    {
        try
        {
            await append.ConfigureAwait(false);
            completion.SetDurable();
        }
        catch (Exception ex)
        {
            completion.SetFailed(ex);
        }
    }

    private async Task ObservePruneAsync(ValueTask truncate, long version)
    {
        try
        {
            await truncate.ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException)
        {
            // Pruning only reclaims; a failed marker leaves old versions listed, which the coordinator ignores.
            DseLogMessages.PruneFailed(Logger, Id, version, ex);
        }
    }
}
