namespace Dse.Services.Tests.Support;

/// <summary>
/// A minimal StateObject standing for a service that consumed speculative output: it remembers one observed value,
/// persisted only when <see cref="Store"/> makes it durable (never, by default, so a restart loses its versions).
/// </summary>
internal sealed class ProbeObject : StateObject
{
    private ProbeObject(DseOptions options)
        : base(options)
    {
    }

    /// <summary>What the object saw; reset to null by a restore of version 0.</summary>
    public string? Observed { get; set; }

    public static ProbeObject Create(long id) => new(LogHarness.Options(id));

    public static async Task<ProbeObject> ConnectAsync(ClusterCoordinator coordinator, long id)
    {
        var probe = Create(id);
        await probe.ConnectAsync(coordinator);
        return probe;
    }

    protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
    {
        // Never durable: this object's versions die with it.
    }

    protected override ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken)
    {
        Observed = null;
        return ValueTask.FromResult(ReadOnlyMemory<byte>.Empty);
    }

    protected override void Prune(long version)
    {
    }

    protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken) =>
        ValueTask.FromResult<IReadOnlyList<PersistedVersion>>([]);
}
