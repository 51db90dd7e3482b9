using System.Collections.Concurrent;
using Dse.Storage;
using FASTER.core;

namespace Dse.Services;

/// <summary>
/// FasterKV's checkpoint manager for a <see cref="SpeculativeKv"/>. Index checkpoints (one in
/// <see cref="SpeculativeKvOptions.IndexCheckpointInterval"/>) go to FASTER's device manager, a directory each under
/// <c>checkpoints/</c>. A hybrid-log checkpoint's commit metadata (FASTER's description of the log at the checkpoint, a
/// few hundred bytes) stays in memory: <see cref="KvCheckpointer"/> writes it into the version's manifest, which is
/// what makes the version durable, and registers it again before a recovery. A fold-over checkpoint then creates no
/// file at all; FASTER's manager would create a directory and a file for each, a hundred a second at a 10 ms group
/// commit.
/// </summary>
/// <remarks>
/// A log token the catalog does not hold (a checkpoint of the older layout, which kept its metadata in FASTER's
/// directory) is looked up, listed and purged through the device manager.
/// </remarks>
internal sealed class KvCheckpointCatalog : ICheckpointManager
{
    private readonly PoolSafeCommitManager _devices;
    private readonly ConcurrentDictionary<Guid, byte[]> _logMetadata = new();

    /// <summary>Takes ownership of <paramref name="devices"/>, FASTER's manager for the index checkpoints.</summary>
    public KvCheckpointCatalog(PoolSafeCommitManager devices) => _devices = devices;

    /// <summary>The commit metadata FASTER gave for the hybrid-log checkpoint <paramref name="logToken"/>.</summary>
    /// <exception cref="InvalidOperationException">FASTER has not committed that checkpoint in this instance.</exception>
    public byte[] LogMetadataOf(Guid logToken) =>
        _logMetadata.TryGetValue(logToken, out var metadata)
            ? metadata
            : throw new InvalidOperationException($"FasterKV committed no hybrid-log checkpoint {logToken} in this instance.");

    /// <summary>Whether <paramref name="token"/> is a hybrid-log checkpoint held here: purging it deletes no file.</summary>
    public bool HoldsLogMetadata(Guid token) => _logMetadata.ContainsKey(token);

    /// <summary>Makes a manifest's hybrid-log checkpoint metadata available to a recovery.</summary>
    public void Register(Guid logToken, byte[] metadata) => _logMetadata[logToken] = metadata;

    /// <inheritdoc />
    public void InitializeIndexCheckpoint(Guid indexToken) => _devices.InitializeIndexCheckpoint(indexToken);

    /// <inheritdoc />
    public void InitializeLogCheckpoint(Guid logToken)
    {
        // Nothing to prepare: the metadata is kept in memory until the manifest is written.
    }

    /// <inheritdoc />
    public void CommitIndexCheckpoint(Guid indexToken, byte[] commitMetadata) => _devices.CommitIndexCheckpoint(indexToken, commitMetadata);

    /// <inheritdoc />
    public void CommitLogCheckpoint(Guid logToken, byte[] commitMetadata) => _logMetadata[logToken] = commitMetadata;

    /// <inheritdoc />
    public void CommitLogIncrementalCheckpoint(Guid logToken, long version, byte[] commitMetadata, DeltaLog deltaLog) =>
        throw new NotSupportedException("SpeculativeKv takes fold-over checkpoints only.");

    /// <inheritdoc />
    public void CheckpointVersionShift(long oldVersion, long newVersion) => _devices.CheckpointVersionShift(oldVersion, newVersion);

    /// <inheritdoc />
    public byte[] GetIndexCheckpointMetadata(Guid indexToken) => _devices.GetIndexCheckpointMetadata(indexToken);

    /// <inheritdoc />
    public byte[] GetLogCheckpointMetadata(Guid logToken, DeltaLog deltaLog, bool scanDelta, long recoverTo) =>
        _logMetadata.TryGetValue(logToken, out var metadata) ? metadata : _devices.GetLogCheckpointMetadata(logToken, deltaLog, scanDelta, recoverTo);

    /// <inheritdoc />
    public IDevice GetIndexDevice(Guid indexToken) => _devices.GetIndexDevice(indexToken);

    /// <inheritdoc />
    public IDevice GetSnapshotLogDevice(Guid token) => _devices.GetSnapshotLogDevice(token);

    /// <inheritdoc />
    public IDevice GetSnapshotObjectLogDevice(Guid token) => _devices.GetSnapshotObjectLogDevice(token);

    /// <inheritdoc />
    public IDevice GetDeltaLogDevice(Guid token) => _devices.GetDeltaLogDevice(token);

    /// <inheritdoc />
    public IEnumerable<Guid> GetIndexCheckpointTokens() => _devices.GetIndexCheckpointTokens();

    /// <inheritdoc />
    public IEnumerable<Guid> GetLogCheckpointTokens() => [.. _logMetadata.Keys, .. _devices.GetLogCheckpointTokens()];

    /// <inheritdoc />
    /// <remarks>A log token held here has no file to delete; any other token goes to the device manager.</remarks>
    public void Purge(Guid token)
    {
        if (!_logMetadata.TryRemove(token, out _))
        {
            _devices.Purge(token);
        }
    }

    /// <inheritdoc />
    public void PurgeAll()
    {
        _logMetadata.Clear();
        _devices.PurgeAll();
    }

    /// <inheritdoc />
    public void OnRecovery(Guid indexToken, Guid logToken) => _devices.OnRecovery(indexToken, logToken);

    /// <inheritdoc />
    public void Dispose() => _devices.Dispose();
}
