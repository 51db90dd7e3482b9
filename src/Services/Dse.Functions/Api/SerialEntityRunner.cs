using Dse.Functions.Engine;

namespace Dse.Functions;

/// <summary>
/// Runs entity classes one transaction at a time on an in-memory dictionary, with the runtime's own call machinery:
/// the reference the runtime's results are checked against, and a unit-test runner for entities (no epochs, no
/// threads). Calls through <see cref="Client"/> run synchronously: the returned task is already complete.
/// </summary>
/// <example>
/// <code>
/// var runner = new SerialEntityRunner(e =&gt; e.Add&lt;AccountEntity&gt;());
/// await runner.Client.Get&lt;IAccount&gt;("alice").Deposit(10);
/// Assert.Equal(10, runner.GetState&lt;IAccount, Account&gt;("alice")!.Balance);
/// </code>
/// </example>
public sealed class SerialEntityRunner : ITransactionSubmitter
{
    private readonly SerialSite _site;
    private readonly TimeProvider _time;
    private long _tid;

    /// <summary>Creates a runner for the entity classes that <paramref name="entities"/> adds.</summary>
    /// <param name="entities">Adds the entity classes.</param>
    /// <param name="time">The clock <see cref="EntityContext.UtcNow"/> reads (default: the system's).</param>
    /// <param name="maxCallDepth">The deepest nesting of calls allowed, as in <see cref="EntityRuntimeOptions.MaxCallDepth"/>.</param>
    public SerialEntityRunner(Action<EntityRegistration> entities, TimeProvider? time = null, int maxCallDepth = EntityRuntimeOptions.DefaultMaxCallDepth)
    {
        ArgumentNullException.ThrowIfNull(entities);
        var registration = new EntityRegistration();
        entities(registration);
        Registry = new EntityRegistry(registration.Classes);
        _site = new SerialSite(Registry, maxCallDepth);
        _time = time ?? TimeProvider.System;
        Client = new EntityClient(Registry, this);
    }

    /// <summary>Starts transactions, each run to its end before the call returns.</summary>
    public EntityClient Client { get; }

    internal EntityRegistry Registry { get; }

    /// <summary>The committed state of an entity, or the default when it was never written.</summary>
    /// <typeparam name="TInterface">The entity interface.</typeparam>
    /// <typeparam name="TState">The entity's state type.</typeparam>
    /// <param name="key">The key.</param>
    /// <returns>The state.</returns>
    public TState? GetState<TInterface, TState>(object key)
        where TInterface : class, IEntity
    {
        EntityAddress address = Registry.Address(Registry.ForInterface(typeof(TInterface)), key);
        return _site.Committed.TryGetValue(address, out object? value) ? (TState?)value : default;
    }

    /// <summary>Every entity's committed state, by entity type name and key.</summary>
    /// <returns>A copy of the committed map.</returns>
    public IReadOnlyDictionary<(string Entity, object Key), object?> Snapshot() =>
        _site.Committed.ToDictionary(kv => (kv.Key.Type.Name, kv.Key.Key), kv => kv.Value);

    void ITransactionSubmitter.Submit(TransactionRequest request)
    {
        long tid = Interlocked.Increment(ref _tid);
        request.Complete(_site.Run(request, tid, epoch: 0, _time.GetUtcNow(), seed: (ulong)tid, TransactionPhase.LockFree));
    }

    /// <summary>Replays one transaction as the runtime ran it (same TID, epoch, time and seed, so the same context).</summary>
    internal TransactionOutcome Replay(TransactionRequest request, long tid, long epoch, DateTimeOffset timestamp, ulong seed, TransactionPhase phase) =>
        _site.Run(request, tid, epoch, timestamp, seed, phase);
}
