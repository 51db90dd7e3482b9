using Microsoft.Extensions.Logging;

namespace Dse.Services;

/// <summary>
/// The versions of a <see cref="SpeculativeKv"/>: one FASTER fold-over checkpoint and one manifest record per persisted
/// version (versions persisted while a checkpoint is queued share the next one), restore by reopening FASTER from a
/// version's checkpoint, and pruning of the manifests and checkpoints no remaining version needs.
/// </summary>
/// <remarks>
/// Invariant: <see cref="_open"/> is the one queued checkpoint (or null), <see cref="_barrier"/> completes once it has
/// started, and every checkpoint starts only after the previous one finished (<see cref="_chain"/>).
/// </remarks>
internal sealed class KvCheckpointer
{
    private readonly SpeculativeKvOptions _options;
    private readonly ILogger _logger;
    private readonly long _id;

    // Guards _open, _barrier, _chain and _log.
    private readonly Lock _checkpointLock = new();

    // The durable versions: what ListVersions returns and what Restore recovers. Opened at the first use.
    private KvManifestLog? _log;

    // The open FasterKV; null until ConnectAsync restores. Replaced only by Restore (no operation runs then).
    private KvStore? _store;

    // Operations wait for this: set while a checkpoint is queued behind another or has not yet moved FASTER's version.
    private Task _barrier = Task.CompletedTask;

    // The versions whose state the next checkpoint to start will hold (operations wait until it starts), or null.
    private Capture? _open;

    // Completes when every checkpoint started so far has finished and its manifests are written (or failed).
    private Task _chain = Task.CompletedTask;

    // The index checkpoint the next hybrid-log-only checkpoint recovers with; Empty forces a full checkpoint.
    private Guid _indexToken;
    private int _sinceIndex;

    public KvCheckpointer(SpeculativeKvOptions options, ILogger logger, long id)
    {
        _options = options;
        _logger = logger;
        _id = id;
    }

    /// <summary>The open store.</summary>
    /// <exception cref="InvalidOperationException">The store is not open yet (before ConnectAsync restores it).</exception>
    public KvStore OpenStore => Volatile.Read(ref _store) ?? throw new InvalidOperationException($"SpeculativeKv {_id} is not open; call ConnectAsync first.");

    /// <summary>Whether no checkpoint is running or queued: a persist now starts one at once, and operations do not wait.</summary>
    public bool Idle
    {
        get
        {
            lock (_checkpointLock)
            {
                return _open is null && _chain.IsCompleted;
            }
        }
    }

    /// <summary>Completes once no checkpoint is queued: operations wait for it (the state must not change before a queued checkpoint starts).</summary>
    public Task Barrier => Volatile.Read(ref _barrier);

    /// <summary>
    /// Starts a fold-over checkpoint and returns once FASTER has moved to its next version (at once when no checkpoint is
    /// running: no session is open then). If the previous checkpoint is still flushing, this version joins a queued one
    /// and operations wait until it starts: until then the state cannot change, so versions persisted meanwhile share it.
    /// </summary>
    public void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
    {
        Capture capture;
        Task previous;
        lock (_checkpointLock)
        {
            if (_open is not null)
            {
                _open.Versions.Add((version, metadata.ToArray(), completion));
                return;
            }

            capture = new Capture();
            capture.Versions.Add((version, metadata.ToArray(), completion));
            _open = capture;
            _barrier = capture.Started.Task;
            previous = _chain;
        }

        // Runs synchronously up to the flush when the previous checkpoint is done, so operations rarely wait.
        _chain = CheckpointAsync(previous, capture);
    }

    /// <summary>Waits for running checkpoints, deletes the later manifests, then reopens FASTER from the version's checkpoint.</summary>
    public async ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken)
    {
        Task chain;
        lock (_checkpointLock)
        {
            chain = _chain;
        }

        await chain.ConfigureAwait(false);
        var manifests = ManifestLog.Live;
        var kept = manifests.FirstOrDefault(m => m.Version == version);
        if (version != 0 && kept is null)
        {
            throw new InvalidOperationException($"SpeculativeKv {_id}: cannot restore version {version}; the store holds versions {string.Join(", ", manifests.Select(m => m.Version))}.");
        }

        var dropped = manifests.Where(m => m.Version > version).ToList();

        // Durably forget the later versions before anything else.
        if (dropped.Count > 0)
        {
            ManifestLog.DropAbove(version);
        }

        var old = Interlocked.Exchange(ref _store, null);
        old?.Dispose();
        if (kept is null)
        {
            KvStore.DeleteLog(_options);
        }

        _store = await KvStore.OpenAsync(_options, kept, cancellationToken).ConfigureAwait(false);
        lock (_checkpointLock)
        {
            // The new lineage gets its own index checkpoint.
            _indexToken = Guid.Empty;
            _sinceIndex = 0;
        }

        Purge(_store, Unreferenced(dropped, manifests.Where(m => m.Version <= version)), version);

        ServicesLogMessages.KvRestored(_logger, _id, version, kept?.LogToken ?? Guid.Empty);
        return kept?.Metadata ?? ReadOnlyMemory<byte>.Empty;
    }

    /// <summary>Deletes the manifests and the checkpoints no remaining version needs.</summary>
    public void Prune(long version)
    {
        var store = Volatile.Read(ref _store);
        var manifests = ManifestLog.Live;
        var pruned = manifests.Where(m => m.Version <= version).ToList();
        if (pruned.Count == 0)
        {
            return;
        }

        try
        {
            // A pruned version that comes back after a crash is harmless while its checkpoints are there: the record
            // is flushed to disk first only when checkpoint files are about to be deleted.
            var unreferenced = store is null ? [] : Unreferenced(pruned, manifests.Where(m => m.Version > version));
            ManifestLog.DropThrough(version, durable: unreferenced.Exists(token => !store!.Checkpoints.HoldsLogMetadata(token)));
            if (store is not null)
            {
                Purge(store, unreferenced, version);
            }
        }
        catch (IOException e)
        {
            // Pruning only reclaims space; what is left is deleted by a later prune or ignored.
            ServicesLogMessages.KvPruneFailed(_logger, _id, version, e);
        }
    }

    /// <summary>The durable versions.</summary>
    public ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync()
    {
        var versions = ManifestLog.Live.Select(m => new PersistedVersion(m.Version, m.Metadata)).ToList();
        return ValueTask.FromResult<IReadOnlyList<PersistedVersion>>(versions);
    }

    /// <summary>Waits for the running checkpoints, then closes the store.</summary>
    public async ValueTask DisposeAsync()
    {
        Task chain;
        lock (_checkpointLock)
        {
            chain = _chain;
        }

        // FASTER must not be disposed under a running checkpoint; failures were reported to the completions already.
        await chain.ConfigureAwait(false);
        Interlocked.Exchange(ref _store, null)?.Dispose();
        lock (_checkpointLock)
        {
            _log?.Dispose();
        }
    }

    private async Task CheckpointAsync(Task previous, Capture capture)
    {
        try
        {
            await previous.ConfigureAwait(false);
            var store = OpenStore;
            bool withIndex;
            lock (_checkpointLock)
            {
                withIndex = _indexToken == Guid.Empty || _sinceIndex + 1 >= _options.IndexCheckpointInterval;
            }

            var (token, shifted) = store.StartCheckpoint(withIndex);

            // With no session open, this call is what drives FASTER's checkpoint state machine, up to the version move
            // synchronously when nothing else holds the epoch.
            var completed = store.Faster.CompleteCheckpointAsync().AsTask();
            await shifted.ConfigureAwait(false);
            Guid indexToken;
            lock (_checkpointLock)
            {
                // From here on operations work in FASTER's next version: later persists need a new checkpoint.
                _open = null;
                if (withIndex)
                {
                    _indexToken = token;
                    _sinceIndex = 0;
                }
                else
                {
                    _sinceIndex++;
                }

                indexToken = _indexToken;
            }

            capture.Started.TrySetResult();
            await completed.ConfigureAwait(false);
            byte[] logMetadata = store.Checkpoints.LogMetadataOf(token);
            var manifests = capture.Versions.ConvertAll(v => new KvManifest(v.Version, indexToken, token, v.Metadata, logMetadata));
            ManifestLog.Add([.. manifests]);

            foreach (var (_, _, completion) in capture.Versions)
            {
                completion.SetDurable();
            }
        }
        catch (Exception e)
        {
            lock (_checkpointLock)
            {
                if (_open == capture)
                {
                    _open = null;
                }
            }

            ServicesLogMessages.KvCheckpointFailed(_logger, _id, capture.Versions[0].Version, capture.Versions[^1].Version, e);
            capture.Started.TrySetException(e);
            foreach (var (_, _, completion) in capture.Versions)
            {
                completion.SetFailed(e);
            }
        }
    }

    /// <summary>The log of the durable manifests, read from disk at the first use.</summary>
    private KvManifestLog ManifestLog
    {
        get
        {
            lock (_checkpointLock)
            {
                return _log ??= KvManifestLog.Open(_options.Directory!);
            }
        }
    }

    /// <summary>The checkpoint tokens of <paramref name="removed"/> that no <paramref name="remaining"/> manifest and no future checkpoint needs.</summary>
    private List<Guid> Unreferenced(List<KvManifest> removed, IEnumerable<KvManifest> remaining)
    {
        var keep = new HashSet<Guid>();
        lock (_checkpointLock)
        {
            keep.Add(_indexToken);
        }

        foreach (var m in remaining)
        {
            keep.Add(m.IndexToken);
            keep.Add(m.LogToken);
        }

        var unreferenced = new List<Guid>();
        foreach (var m in removed)
        {
            foreach (var token in (ReadOnlySpan<Guid>)[m.LogToken, m.IndexToken])
            {
                if (keep.Add(token))
                {
                    unreferenced.Add(token);
                }
            }
        }

        return unreferenced;
    }

    private void Purge(KvStore store, List<Guid> tokens, long version)
    {
        try
        {
            foreach (var token in tokens)
            {
                store.Checkpoints.Purge(token);
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            ServicesLogMessages.KvPruneFailed(_logger, _id, version, e);
        }
    }

    /// <summary>Versions persisted with the same state, held by one checkpoint.</summary>
    private sealed class Capture
    {
        public List<(long Version, byte[] Metadata, PersistCompletion Completion)> Versions { get; } = [];

        /// <summary>Completes once the checkpoint has started and FASTER moved past it: operations may go on.</summary>
        public TaskCompletionSource Started { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
