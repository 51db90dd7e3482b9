namespace Dse.Coordinator;

/// <summary>
/// A coordinator log over an <see cref="InMemoryCoordinatorLogStore"/>, for tests and the deterministic simulation.
/// Every operation completes synchronously (the returned tasks are already complete), so a single-threaded simulation
/// stays deterministic; "durable" means stored in the store, which survives this instance.
/// </summary>
/// <remarks>
/// Fencing: each <see cref="OpenAsync"/> starts a new generation of the store; an instance whose generation is no
/// longer the latest fails its appends with <see cref="CoordinatorLogFencedException"/>. The newcomer always wins.
/// </remarks>
public sealed class InMemoryCoordinatorLog : ICoordinatorLog
{
    private readonly InMemoryCoordinatorLogStore _store;

    /// <summary>Guards the state below; appends from several threads are allowed.</summary>
    private readonly Lock _lock = new();

    /// <summary>This instance's generation in the store; 0 until opened.</summary>
    private long _generation;

    private bool _openCalled;
    private bool _fenced;
    private bool _disposed;
    private long _durableAppends;

    /// <summary>Creates a log over <paramref name="store"/>; it touches the store only when opened.</summary>
    public InMemoryCoordinatorLog(InMemoryCoordinatorLogStore store)
    {
        ArgumentNullException.ThrowIfNull(store);
        _store = store;
    }

    /// <inheritdoc />
    public string Description => "in-memory";

    /// <inheritdoc />
    public long DurableAppends => Interlocked.Read(ref _durableAppends);

    /// <inheritdoc />
    public Task<IReadOnlyList<ReadOnlyMemory<byte>>> OpenAsync(CancellationToken cancellationToken = default)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return Task.FromCanceled<IReadOnlyList<ReadOnlyMemory<byte>>>(cancellationToken);
        }

        lock (_lock)
        {
            if (_disposed)
            {
                return Task.FromException<IReadOnlyList<ReadOnlyMemory<byte>>>(new ObjectDisposedException(nameof(InMemoryCoordinatorLog)));
            }

            if (_openCalled)
            {
                return Task.FromException<IReadOnlyList<ReadOnlyMemory<byte>>>(
                    new InvalidOperationException("This in-memory coordinator log was already opened; create a new instance to reopen it."));
            }

            _openCalled = true;
            _generation = _store.Open(out var records);
            return Task.FromResult(records);
        }
    }

    /// <inheritdoc />
    public Task AppendAsync(ReadOnlyMemory<byte> record, CancellationToken cancellationToken = default)
    {
        try
        {
            CoordinatorLogFormat.ValidateRecord(record, nameof(record));
        }
        catch (ArgumentException ex)
        {
            return Task.FromException(ex);
        }

        if (cancellationToken.IsCancellationRequested)
        {
            return Task.FromCanceled(cancellationToken);
        }

        lock (_lock)
        {
            if (_disposed)
            {
                return Task.FromException(new ObjectDisposedException(nameof(InMemoryCoordinatorLog)));
            }

            if (!_openCalled)
            {
                return Task.FromException(new InvalidOperationException("The in-memory coordinator log is not open; call OpenAsync first."));
            }

            if (_fenced || !_store.TryAppend(_generation, record.ToArray()))
            {
                _fenced = true;
                return Task.FromException(new CoordinatorLogFencedException(
                    $"The in-memory coordinator log was opened by a newer incarnation (generation {_store.Generation}); this one (generation {_generation}) is fenced out."));
            }

            Interlocked.Increment(ref _durableAppends);
            return Task.CompletedTask;
        }
    }

    /// <summary>Marks the instance disposed; the store and its records stay.</summary>
    public ValueTask DisposeAsync()
    {
        lock (_lock)
        {
            _disposed = true;
        }

        return ValueTask.CompletedTask;
    }
}
