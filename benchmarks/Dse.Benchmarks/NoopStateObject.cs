namespace Dse.Benchmarks;

/// <summary>
/// A StateObject with no state: Persist captures nothing and completes durable at once, so a benchmark measures the
/// runtime's own cost (actions, headers, version advances) and nothing of storage.
/// </summary>
internal sealed class NoopStateObject(DseOptions options) : StateObject(options)
{
    private long _persisted;
    private int _maxDependencies;

    /// <summary>Versions handed to Persist so far (the background advance's count while it runs).</summary>
    public long PersistedCount => Volatile.Read(ref _persisted);

    /// <summary>The most dependencies any persisted version carried: proof that received headers were recorded.</summary>
    public int MaxDependencies => Volatile.Read(ref _maxDependencies);

    /// <summary>Creates a StateObject connected to <paramref name="coordinator"/>.</summary>
    public static async Task<NoopStateObject> ConnectNewAsync(IDseCoordinator coordinator, long objectId, bool runBackgroundTasks, TimeSpan groupCommitPeriod)
    {
        var so = new NoopStateObject(new DseOptions
        {
            ObjectId = objectId,
            RunBackgroundTasks = runBackgroundTasks,
            GroupCommitPeriod = groupCommitPeriod,
        });
        await so.ConnectAsync(coordinator).ConfigureAwait(false);
        return so;
    }

    protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
    {
        Interlocked.Increment(ref _persisted);

        // Persist never runs concurrently with itself, so a plain max is enough.
        int deps = VersionMetadata.Decode(version, metadata.Span).Dependencies.Count;
        if (deps > _maxDependencies)
        {
            Volatile.Write(ref _maxDependencies, deps);
        }

        completion.SetDurable();
    }

    protected override ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken) =>
        new(ReadOnlyMemory<byte>.Empty);

    protected override void Prune(long version)
    {
    }

    protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken) =>
        new(Array.Empty<PersistedVersion>());
}
