namespace Dse.Services;

/// <summary>Persist, restore, prune and listing: one FASTER checkpoint and one manifest per version.</summary>
public sealed partial class SpeculativeKv
{
    // Guards _open, _barrier, _chain and _manifests.
    private readonly Lock _checkpointLock = new();

    // Durable versions by number: what ListVersions returns and what Restore recovers. Loaded at the first listing.
    private SortedList<long, KvManifest>? _manifests;

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

    private KvStore OpenStore => Volatile.Read(ref _store) ?? throw new InvalidOperationException($"SpeculativeKv {Id} is not open; call ConnectAsync first.");

    /// <inheritdoc />
    /// <remarks>
    /// Starts a fold-over checkpoint and returns once FASTER has moved to its next version (at once when no checkpoint is
    /// running: no session is open then). If the previous checkpoint is still flushing, this version joins a queued one
    /// and operations wait until it starts: until then the state cannot change, so versions persisted meanwhile share it.
    /// </remarks>
    protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
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

    /// <inheritdoc />
    /// <remarks>Waits for running checkpoints, deletes the later manifests, then reopens FASTER from the version's checkpoint.</remarks>
    protected override async ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken)
    {
        Task chain;
        lock (_checkpointLock)
        {
            chain = _chain;
        }

        await chain.ConfigureAwait(false);
        KvManifest? kept = null;
        var dropped = new List<KvManifest>();
        lock (_checkpointLock)
        {
            var manifests = LoadManifests();
            if (version != 0 && !manifests.TryGetValue(version, out kept))
            {
                throw new InvalidOperationException($"SpeculativeKv {Id}: cannot restore version {version}; the store holds versions {string.Join(", ", manifests.Keys)}.");
            }

            while (manifests.Count > 0 && manifests.Keys[^1] > version)
            {
                dropped.Add(manifests.Values[^1]);
                manifests.RemoveAt(manifests.Count - 1);
            }
        }

        // Durably forget the later versions before anything else.
        foreach (var m in dropped)
        {
            KvManifest.Delete(_kvOptions.Directory!, m.Version);
        }

        var old = Interlocked.Exchange(ref _store, null);
        old?.Dispose();
        if (kept is null)
        {
            KvStore.DeleteLog(_kvOptions);
        }

        _store = await KvStore.OpenAsync(_kvOptions, kept?.IndexToken ?? Guid.Empty, kept?.LogToken ?? Guid.Empty, cancellationToken).ConfigureAwait(false);
        lock (_checkpointLock)
        {
            // The new lineage gets its own index checkpoint.
            _indexToken = Guid.Empty;
            _sinceIndex = 0;
        }

        PurgeUnreferenced(_store, dropped, version);

        ServicesLog.KvRestored(Logger, Id, version, kept?.LogToken ?? Guid.Empty);
        return kept?.Metadata ?? ReadOnlyMemory<byte>.Empty;
    }

    /// <inheritdoc />
    /// <remarks>Deletes the manifests and the checkpoints no remaining version needs.</remarks>
    protected override void Prune(long version)
    {
        var store = Volatile.Read(ref _store);
        var pruned = new List<KvManifest>();
        lock (_checkpointLock)
        {
            var manifests = LoadManifests();
            while (manifests.Count > 0 && manifests.Keys[0] <= version)
            {
                pruned.Add(manifests.Values[0]);
                manifests.RemoveAt(0);
            }
        }

        try
        {
            foreach (var m in pruned)
            {
                KvManifest.Delete(_kvOptions.Directory!, m.Version);
            }

            if (store is not null)
            {
                PurgeUnreferenced(store, pruned, version);
            }
        }
        catch (IOException e)
        {
            // Pruning only reclaims space; what is left is deleted by a later prune or ignored.
            ServicesLog.KvPruneFailed(Logger, Id, version, e);
        }
    }

    /// <inheritdoc />
    protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken)
    {
        lock (_checkpointLock)
        {
            var manifests = LoadManifests();
            var versions = new List<PersistedVersion>(manifests.Count);
            foreach (var m in manifests.Values)
            {
                versions.Add(new PersistedVersion(m.Version, m.Metadata));
            }

            return ValueTask.FromResult<IReadOnlyList<PersistedVersion>>(versions);
        }
    }

    /// <inheritdoc />
    protected override async ValueTask DisposeAsyncCore()
    {
        await base.DisposeAsyncCore().ConfigureAwait(false);
        Task chain;
        lock (_checkpointLock)
        {
            chain = _chain;
        }

        // FASTER must not be disposed under a running checkpoint; failures were reported to the completions already.
        await chain.ConfigureAwait(false);
        Interlocked.Exchange(ref _store, null)?.Dispose();
        _exclusive.Dispose();
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
                withIndex = _indexToken == Guid.Empty || _sinceIndex + 1 >= _kvOptions.IndexCheckpointInterval;
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
            foreach (var (version, metadata, _) in capture.Versions)
            {
                var manifest = new KvManifest(version, indexToken, token, metadata);
                manifest.Write(_kvOptions.Directory!);
                lock (_checkpointLock)
                {
                    LoadManifests()[version] = manifest;
                }
            }

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

            ServicesLog.KvCheckpointFailed(Logger, Id, capture.Versions[0].Version, capture.Versions[^1].Version, e);
            capture.Started.TrySetException(e);
            foreach (var (_, _, completion) in capture.Versions)
            {
                completion.SetFailed(e);
            }
        }
    }

    /// <summary>The durable manifests, read from disk once. Under _checkpointLock (or before any concurrency).</summary>
    private SortedList<long, KvManifest> LoadManifests() => _manifests ??= KvManifest.ReadAll(_kvOptions.Directory!);

    /// <summary>Deletes the checkpoints of <paramref name="removed"/> that no remaining manifest and no future checkpoint needs.</summary>
    private void PurgeUnreferenced(KvStore store, List<KvManifest> removed, long version)
    {
        var keep = new HashSet<Guid>();
        lock (_checkpointLock)
        {
            keep.Add(_indexToken);
            foreach (var m in LoadManifests().Values)
            {
                keep.Add(m.IndexToken);
                keep.Add(m.LogToken);
            }
        }

        try
        {
            foreach (var m in removed)
            {
                foreach (var token in (ReadOnlySpan<Guid>)[m.LogToken, m.IndexToken])
                {
                    if (keep.Add(token))
                    {
                        store.Checkpoints.Purge(token);
                    }
                }
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            ServicesLog.KvPruneFailed(Logger, Id, version, e);
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
