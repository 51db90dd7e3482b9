namespace Dse.Functions;

/// <summary>Gives proxies of entities: inside an entity, calls in the current transaction; outside, new transactions.</summary>
public interface IEntityFactory
{
    /// <summary>A proxy for the entity of interface <typeparamref name="T"/> with key <paramref name="key"/>.</summary>
    /// <typeparam name="T">An entity interface registered in the runtime.</typeparam>
    /// <param name="key">The key; its type must be the interface's key type.</param>
    /// <returns>The proxy. Creating it does nothing; its methods make the calls.</returns>
    T Get<T>(object key)
        where T : class, IEntity;
}
