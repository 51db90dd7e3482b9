namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>An in-memory log whose appends fail once <see cref="FailAppends"/> is set, like a storage outage.</summary>
public sealed class FaultyCoordinatorLog(InMemoryCoordinatorLogStore store) : ICoordinatorLog
{
    private readonly InMemoryCoordinatorLog _inner = new(store);

    public bool FailAppends { get; set; }

    public string Description => "faulty in-memory";

    public long DurableAppends => _inner.DurableAppends;

    public Task<IReadOnlyList<ReadOnlyMemory<byte>>> OpenAsync(CancellationToken cancellationToken = default) => _inner.OpenAsync(cancellationToken);

    public Task AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default) =>
        FailAppends ? Task.FromException(new IOException("Injected append failure.")) : _inner.AppendAsync(record, cancellationToken);

    public ValueTask DisposeAsync() => _inner.DisposeAsync();
}
