using Dse.Functions.Engine;

namespace Dse.Functions;

/// <summary>
/// Starts transactions: each call of a proxy from <see cref="Get{T}(object)"/> is one serializable transaction whose
/// root is that call. The task completes with the return value once the transaction committed, or faults with
/// <see cref="EntityTransactionAbortedException"/> once it aborted. A <see cref="OneWayAttribute"/> method called from
/// here is a transaction like any other and is awaited the same way.
/// </summary>
public sealed class EntityClient : IEntityFactory
{
    private readonly EntityRegistry _registry;
    private readonly ITransactionSubmitter _submitter;
    private readonly Caller _caller;
    private long _nextRequestId;

    internal EntityClient(EntityRegistry registry, ITransactionSubmitter submitter)
    {
        _registry = registry;
        _submitter = submitter;
        _caller = new Caller(this);
    }

    /// <inheritdoc />
    public T Get<T>(object key)
        where T : class, IEntity =>
        _registry.CreateProxy<T>(key, _caller);

    /// <summary>
    /// Submits a transaction described by names and bytes, as a gateway receives it from the network. Every refusal is
    /// an outcome, never an exception: an unknown entity type or a key that does not deserialize is
    /// <see cref="TransactionPhase.Rejected"/>; an unknown method or arguments that do not deserialize abort the
    /// transaction (nothing applied).
    /// </summary>
    /// <param name="entityType">The entity type's name.</param>
    /// <param name="key">The key, MemoryPack-serialized as the type's key type.</param>
    /// <param name="method">The method's name.</param>
    /// <param name="args">The arguments: MemoryPack of the one parameter, of a value tuple of several, or empty for none.</param>
    /// <returns>The outcome, with its epoch, TID and phase.</returns>
    public Task<TransactionOutcome> SubmitAsync(string entityType, ReadOnlyMemory<byte> key, string method, ReadOnlyMemory<byte> args)
    {
        ArgumentNullException.ThrowIfNull(entityType);
        ArgumentNullException.ThrowIfNull(method);
        long id = Interlocked.Increment(ref _nextRequestId);
        EntityType? type = _registry.ByName(entityType);
        if (type is null)
        {
            return Task.FromResult(Rejected(id, new UnknownEntityException($"No entity type named {entityType} is registered."), entityType, "?"));
        }

        EntityAddress target;
        try
        {
            target = _registry.Address(type, key.Span);
        }
        catch (EntityArgumentException e)
        {
            return Task.FromResult(Rejected(id, e, entityType, "?"));
        }

        var request = new TransactionRequest(id, target, method, args.ToArray());
        _submitter.Submit(request);
        return request.Outcome;
    }

    internal Task<TransactionOutcome> SubmitAsync(EntityAddress target, string method, byte[] args)
    {
        var request = new TransactionRequest(Interlocked.Increment(ref _nextRequestId), target, method, args);
        _submitter.Submit(request);
        return request.Outcome;
    }

    private static TransactionOutcome Rejected(long id, Exception error, string entity, string key) =>
        new(id, -1, -1, TransactionPhase.Rejected, WireFormat.Empty, new EntityAbort(error.GetType().FullName!, error.Message, entity, key));

    private sealed class Caller(EntityClient client) : IEntityCaller
    {
        public async Task<TResult> CallAsync<TArgs, TResult>(EntityAddress target, string method, TArgs args, bool oneWay)
        {
            TransactionOutcome outcome = await client.SubmitAsync(target, method, WireFormat.Encode(args)).ConfigureAwait(false);
            return outcome.GetResult<TResult>();
        }
    }
}

/// <summary>Takes a transaction request: the runtime's sequencer, or the serial runner.</summary>
internal interface ITransactionSubmitter
{
    void Submit(TransactionRequest request);
}
