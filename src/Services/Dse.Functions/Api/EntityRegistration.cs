namespace Dse.Functions;

/// <summary>The entity classes a runtime or a serial runner hosts.</summary>
public sealed class EntityRegistration
{
    private readonly List<Type> _classes = [];

    internal IReadOnlyList<Type> Classes => _classes;

    /// <summary>Hosts entity class <typeparamref name="TEntity"/> (its generated registration is found by type).</summary>
    /// <typeparam name="TEntity">A class deriving from <see cref="Entity{TKey, TState}"/>.</typeparam>
    /// <returns>This registration, for chaining.</returns>
    public EntityRegistration Add<TEntity>()
        where TEntity : class, IEntity
    {
        _classes.Add(typeof(TEntity));
        return this;
    }

    /// <summary>Hosts the given entity classes.</summary>
    /// <param name="entityClasses">Classes deriving from <see cref="Entity{TKey, TState}"/>.</param>
    /// <returns>This registration, for chaining.</returns>
    public EntityRegistration Add(params Type[] entityClasses)
    {
        ArgumentNullException.ThrowIfNull(entityClasses);
        _classes.AddRange(entityClasses);
        return this;
    }
}
