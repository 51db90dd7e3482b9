namespace Dse.Tests;

/// <summary>
/// A test StateObject whose state is a history of event ids, persisted as whole snapshots in a
/// <see cref="MemoryVersionStore"/>. It counts what runs concurrently with Persist and Restore, so tests can assert the
/// runtime's exclusion rules.
/// </summary>
internal sealed class MemoryStateObject : StateObject
{
    private readonly Lock _historyLock = new();
    private List<long> _history = [];
    private int _inPersistOrRestore;

    public MemoryStateObject(DseOptions options, IVersionStore store)
        : base(options)
    {
        VersionStore = store;
    }

    public IVersionStore VersionStore { get; }

    /// <summary>The store, for tests that use the in-memory one.</summary>
    public MemoryVersionStore Store => (MemoryVersionStore)VersionStore;

    public List<long> RestoredVersions { get; } = [];

    public List<long> PrunedThrough { get; } = [];

    /// <summary>Called with each version restored, before the state changes.</summary>
    public Action<long>? OnRestore { get; set; }

    /// <summary>What <see cref="CanPersistNow"/> answers: false holds the periodic advance.</summary>
    public bool ReadyToPersist { get; set; } = true;

    /// <summary>Actions in flight, maintained by tests' own action bodies.</summary>
    public int ActionsInside;

    public int Violations;

    public static MemoryStateObject Create(long id, IVersionStore? store = null, bool background = false, bool speculative = true, TimeSpan? period = null, TimeProvider? time = null) =>
        new(new DseOptions { ObjectId = id, RunBackgroundTasks = background, Speculative = speculative, GroupCommitPeriod = period ?? TimeSpan.FromMilliseconds(10), TimeProvider = time ?? TimeProvider.System }, store ?? new MemoryVersionStore());

    public long[] History
    {
        get
        {
            lock (_historyLock)
            {
                return [.. _history];
            }
        }
    }

    /// <summary>Appends an event; call inside an action.</summary>
    public void Record(long eventId)
    {
        lock (_historyLock)
        {
            _history.Add(eventId);
        }
    }

    protected override bool CanPersistNow => ReadyToPersist;

    protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
    {
        Enter();
        try
        {
            VersionStore.Add(version, metadata.ToArray(), History, completion);
        }
        finally
        {
            Interlocked.Decrement(ref _inPersistOrRestore);
        }
    }

    protected override async ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken)
    {
        Enter();
        try
        {
            OnRestore?.Invoke(version);
            RestoredVersions.Add(version);
            var history = await VersionStore.RestoreAsync(version);
            lock (_historyLock)
            {
                _history = history is null ? [] : [.. history];
            }

            return ReadOnlyMemory<byte>.Empty;
        }
        finally
        {
            Interlocked.Decrement(ref _inPersistOrRestore);
        }
    }

    protected override void Prune(long version)
    {
        PrunedThrough.Add(version);
        VersionStore.PruneThrough(version);
    }

    protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken) =>
        ValueTask.FromResult(VersionStore.List());

    private void Enter()
    {
        if (Interlocked.Increment(ref _inPersistOrRestore) != 1 || Volatile.Read(ref ActionsInside) != 0)
        {
            Interlocked.Increment(ref Violations);
        }
    }
}
