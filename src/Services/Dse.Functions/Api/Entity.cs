using Dse.Functions.Engine;

namespace Dse.Functions;

/// <summary>
/// The base class of an entity: one instance of state per key, changed only by transactions. A method reads
/// <see cref="State"/> (the state as of the transaction's snapshot plus its own writes) and assigns it (a write
/// buffered until the transaction commits). Any exception a method throws, caught by its caller or not, aborts the
/// whole transaction everywhere: nothing it wrote, on any entity, is applied.
/// </summary>
/// <remarks>
/// An instance lives for one invocation; keep nothing in fields. The runtime runs each partition's invocations on one
/// thread, so a method must not block, start threads, or await anything but calls to entities: the determinism
/// analyzers flag clocks, <see cref="System.Random"/>, <see cref="Guid.NewGuid"/>, <c>Task.Run</c>,
/// <c>Task.Delay</c> and I/O types. Time and randomness come from <see cref="Context"/>.
/// </remarks>
/// <typeparam name="TKey">The key type.</typeparam>
/// <typeparam name="TState">
/// The state type: a MemoryPack-serializable type, best an immutable record (a mutable class is copied on each
/// invocation's first read so that a change in place is never seen by others).
/// </typeparam>
public abstract class Entity<TKey, TState> : IEntityBinding
    where TKey : notnull
{
    private Invocation? _invocation;

    /// <summary>This entity's key.</summary>
    public TKey Key => (TKey)Current.Target.Key;

    /// <summary>
    /// The entity's state. A read returns the state as of the transaction's snapshot plus the transaction's own
    /// writes (<see cref="Initial"/> for a key never written); an assignment buffers a write.
    /// </summary>
    protected TState State
    {
        get => Current.ReadState<TState>(this);
        set => Current.WriteState(value);
    }

    /// <summary>The state of a key that was never written. Default: <c>default(TState)</c>.</summary>
    protected virtual TState Initial => default!;

    /// <summary>The transaction's replay-safe time, randomness and identity.</summary>
    protected EntityContext Context => Current.Context;

    /// <summary>Proxies for calls to other entities (or this one) inside the same transaction.</summary>
    protected IEntityFactory Entities => Current.Factory;

    private Invocation Current => _invocation ?? throw new InvalidOperationException(
        $"{GetType().Name} is used outside an invocation: an entity instance is created by the runtime for one call and is not usable after it.");

    Invocation? IEntityBinding.Invocation
    {
        get => _invocation;
        set => _invocation = value;
    }

    object? IEntityBinding.InitialState => Initial;
}

/// <summary>Connects an entity instance to the invocation that runs it (runtime plumbing).</summary>
internal interface IEntityBinding
{
    Invocation? Invocation { get; set; }

    object? InitialState { get; }
}
