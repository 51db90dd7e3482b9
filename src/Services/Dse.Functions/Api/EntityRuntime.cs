using Dse.Functions.Engine;

namespace Dse.Functions;

/// <summary>
/// Hosts entities and runs every client call as one serializable transaction, in deterministic epochs: a sequencer
/// gives each epoch's transactions their TIDs, partitions run them lock-free on the epoch-start snapshot, Aria's rule
/// decides which commit, and the rest run again in TID order (docs/functions.md). This runtime is in one process and
/// keeps state in memory.
/// </summary>
/// <example>
/// <code>
/// await using var runtime = EntityRuntime.Start(o =&gt; o.Partitions = 2, e =&gt; e.Add&lt;AccountEntity&gt;());
/// long left = await runtime.Client.Get&lt;IAccount&gt;("alice").TransferTo("bob", 10);
/// </code>
/// </example>
public sealed class EntityRuntime : IAsyncDisposable
{
    private readonly EpochEngine _engine;
    private int _disposed;

    private EntityRuntime(EntityRuntimeOptions options, EntityRegistry registry, IEpochLog log)
    {
        _engine = new EpochEngine(options, registry, log);
        Client = new EntityClient(registry, _engine.Sequencer);
        _engine.Start();
    }

    /// <summary>Starts transactions.</summary>
    public EntityClient Client { get; }

    /// <summary>What the runtime has done so far.</summary>
    public EntityRuntimeStatistics Statistics => _engine.Statistics.Snapshot();

    internal EpochEngine Engine => _engine;

    /// <summary>Starts a runtime.</summary>
    /// <param name="configure">Sets options (default: 2 partitions, epochs of 1 ms or 1000 transactions).</param>
    /// <param name="entities">Adds the entity classes it hosts.</param>
    /// <returns>The running runtime; dispose it to stop.</returns>
    public static EntityRuntime Start(Action<EntityRuntimeOptions>? configure, Action<EntityRegistration> entities) =>
        Start(configure, entities, DiscardingEpochLog.Instance);

    internal static EntityRuntime Start(Action<EntityRuntimeOptions>? configure, Action<EntityRegistration> entities, IEpochLog log)
    {
        ArgumentNullException.ThrowIfNull(entities);
        var options = new EntityRuntimeOptions();
        configure?.Invoke(options);
        options.Validate();
        var registration = new EntityRegistration();
        entities(registration);
        if (registration.Classes.Count == 0)
        {
            throw new ArgumentException("Register at least one entity class.", nameof(entities));
        }

        return new EntityRuntime(options, new EntityRegistry(registration.Classes), log);
    }

    /// <summary>
    /// The committed state of one entity (the default when it was never written), read on its partition between two
    /// of its messages: the state after some epoch's commit there.
    /// </summary>
    /// <typeparam name="TInterface">The entity interface.</typeparam>
    /// <typeparam name="TState">The state type.</typeparam>
    /// <param name="key">The key.</param>
    /// <returns>The state.</returns>
    public Task<TState?> GetStateAsync<TInterface, TState>(object key)
        where TInterface : class, IEntity
    {
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        EntityAddress address = _engine.Registry.Address(_engine.Registry.ForInterface(typeof(TInterface)), key);
        var result = new TaskCompletionSource<TState?>(TaskCreationOptions.RunContinuationsAsynchronously);
        Partition partition = _engine.PartitionOf(address);
        partition.Post(new ContinuationMessage(
            _ => result.TrySetResult(partition.Committed.TryGetValue(address, out object? value) ? (TState?)value : default), null));
        return result.Task;
    }

    /// <summary>Every entity's committed state, by entity type name and key. Consistent only when no transaction is running.</summary>
    /// <returns>A copy of the committed maps of all partitions.</returns>
    public async Task<IReadOnlyDictionary<(string Entity, object Key), object?>> SnapshotAsync()
    {
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        var parts = new List<Task<KeyValuePair<EntityAddress, object?>[]>>();
        foreach (Partition partition in _engine.Partitions)
        {
            var part = new TaskCompletionSource<KeyValuePair<EntityAddress, object?>[]>(TaskCreationOptions.RunContinuationsAsynchronously);
            partition.Post(new ContinuationMessage(_ => part.TrySetResult([.. partition.Committed]), null));
            parts.Add(part.Task);
        }

        var all = new Dictionary<(string, object), object?>();
        foreach (KeyValuePair<EntityAddress, object?>[] part in await Task.WhenAll(parts).ConfigureAwait(false))
        {
            foreach ((EntityAddress address, object? value) in part)
            {
                all[(address.Type.Name, address.Key)] = value;
            }
        }

        return all;
    }

    /// <summary>Stops the runtime; transactions without an outcome fail with <see cref="ObjectDisposedException"/>.</summary>
    /// <returns>Completes when the partitions' threads have ended.</returns>
    public ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) == 0)
        {
            _engine.Stop();
        }

        return ValueTask.CompletedTask;
    }
}
