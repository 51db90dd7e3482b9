using System.Collections.Concurrent;

namespace Dse.Functions;

/// <summary>
/// The process-wide list of entity proxies and dispatchers. The source generator registers every entity interface and
/// entity class of an assembly from a module initializer; a runtime then picks the classes it is given.
/// </summary>
public static class EntityCatalog
{
    private static readonly ConcurrentDictionary<Type, Func<EntityProxyContext, object>> Proxies = new();
    private static readonly ConcurrentDictionary<Type, EntityClassInfo> Classes = new();

    /// <summary>Registers the proxy of an entity interface.</summary>
    /// <typeparam name="TInterface">The entity interface.</typeparam>
    /// <param name="create">Creates a proxy.</param>
    public static void RegisterProxy<TInterface>(Func<EntityProxyContext, TInterface> create)
        where TInterface : class, IEntity
    {
        ArgumentNullException.ThrowIfNull(create);
        Proxies[typeof(TInterface)] = create;
    }

    /// <summary>Registers an entity class: its name, how to create it, its entity interfaces and its methods.</summary>
    /// <typeparam name="TEntity">The entity class.</typeparam>
    /// <typeparam name="TKey">Its key type.</typeparam>
    /// <typeparam name="TState">Its state type.</typeparam>
    /// <param name="name">The entity type's name (<see cref="EntityTypeAttribute"/>, or the class name).</param>
    /// <param name="create">Creates an instance for one invocation.</param>
    /// <param name="interfaces">The entity interfaces the class implements.</param>
    /// <param name="methods">Its methods: those of its entity interfaces.</param>
    public static void RegisterEntity<TEntity, TKey, TState>(string name, Func<TEntity> create, Type[] interfaces, EntityMethod[] methods)
        where TEntity : Entity<TKey, TState>
        where TKey : notnull
    {
        ArgumentException.ThrowIfNullOrEmpty(name);
        ArgumentNullException.ThrowIfNull(create);
        ArgumentNullException.ThrowIfNull(interfaces);
        ArgumentNullException.ThrowIfNull(methods);
        Classes[typeof(TEntity)] = new EntityClassInfo(name, typeof(TEntity), typeof(TKey), typeof(TState), create, interfaces, methods);
    }

    internal static bool TryGetClass(Type entityClass, out EntityClassInfo info) => Classes.TryGetValue(entityClass, out info!);

    internal static bool TryGetProxyFactory(Type entityInterface, out Func<EntityProxyContext, object> create) =>
        Proxies.TryGetValue(entityInterface, out create!);
}

/// <summary>An entity class as registered by generated code.</summary>
internal sealed record EntityClassInfo(
    string Name, Type ClassType, Type KeyType, Type StateType, Func<object> Create, Type[] Interfaces, EntityMethod[] Methods);
