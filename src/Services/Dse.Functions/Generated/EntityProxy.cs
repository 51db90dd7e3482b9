using Dse.Functions.Engine;

namespace Dse.Functions;

/// <summary>
/// The base class of the proxies the source generator writes for entity interfaces. Not for direct use: obtain a proxy
/// from <see cref="IEntityFactory.Get{T}(object)"/>.
/// </summary>
public abstract class EntityProxy
{
    private readonly EntityProxyContext _context;

    /// <summary>Creates the proxy for the target and caller in <paramref name="context"/>.</summary>
    /// <param name="context">Given by the runtime.</param>
    protected EntityProxy(EntityProxyContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        _context = context;
    }

    /// <summary>An awaited call of <paramref name="method"/> that returns a value.</summary>
    /// <typeparam name="TArgs">The argument (one parameter), a value tuple of them (several), or <see cref="Unit"/>.</typeparam>
    /// <typeparam name="TResult">The method's result type.</typeparam>
    /// <param name="method">The method's name.</param>
    /// <param name="args">The arguments.</param>
    /// <returns>The result, or an <see cref="EntityTransactionAbortedException"/> when the call failed.</returns>
    protected Task<TResult> Call<TArgs, TResult>(string method, TArgs args) =>
        _context.Caller.CallAsync<TArgs, TResult>(_context.Target, method, args, oneWay: false);

    /// <summary>An awaited call of <paramref name="method"/> that returns no value.</summary>
    /// <typeparam name="TArgs">The argument (one parameter), a value tuple of them (several), or <see cref="Unit"/>.</typeparam>
    /// <param name="method">The method's name.</param>
    /// <param name="args">The arguments.</param>
    /// <returns>Completes when the call has; faults with <see cref="EntityTransactionAbortedException"/> when it failed.</returns>
    protected Task Call<TArgs>(string method, TArgs args) =>
        _context.Caller.CallAsync<TArgs, Unit>(_context.Target, method, args, oneWay: false);

    /// <summary>A one-way call of <paramref name="method"/>: runs after the caller's body returns.</summary>
    /// <typeparam name="TArgs">The argument (one parameter), a value tuple of them (several), or <see cref="Unit"/>.</typeparam>
    /// <param name="method">The method's name.</param>
    /// <param name="args">The arguments.</param>
    /// <returns>A completed task.</returns>
    protected Task CallOneWay<TArgs>(string method, TArgs args) =>
        _context.Caller.CallAsync<TArgs, Unit>(_context.Target, method, args, oneWay: true);
}

/// <summary>What a proxy calls and through whom (runtime plumbing, opaque to generated code).</summary>
public sealed class EntityProxyContext
{
    internal EntityProxyContext(EntityAddress target, IEntityCaller caller)
    {
        Target = target;
        Caller = caller;
    }

    internal EntityAddress Target { get; }

    internal IEntityCaller Caller { get; }
}
