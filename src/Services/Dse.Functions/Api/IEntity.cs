namespace Dse.Functions;

/// <summary>
/// Marks an entity interface. Do not implement this directly: derive the interface from <see cref="IEntity{TKey}"/>.
/// </summary>
public interface IEntity;

/// <summary>
/// An entity interface whose instances are addressed by a key of type <typeparamref name="TKey"/>, in the way an
/// Orleans grain interface derives from <c>IGrainWithStringKey</c>. Every method returns <see cref="Task"/> or
/// <see cref="Task{TResult}"/>; calls go through a proxy the source generator writes, obtained from
/// <c>Entities.Get&lt;T&gt;(key)</c> inside an entity or <c>EntityClient.Get&lt;T&gt;(key)</c> outside.
/// </summary>
/// <typeparam name="TKey">The key type: a type MemoryPack serializes, with value equality (string, Guid, int, long, a record).</typeparam>
public interface IEntity<TKey> : IEntity
    where TKey : notnull;

/// <summary>
/// Marks an entity interface method as one-way (Styx's asynchronous call): the call returns a completed task at once,
/// and the invocation runs after the calling method's body has returned, inside the same transaction. The method must
/// return <see cref="Task"/>.
/// </summary>
[AttributeUsage(AttributeTargets.Method, AllowMultiple = false, Inherited = false)]
public sealed class OneWayAttribute : Attribute;

/// <summary>
/// Names an entity type on the wire and in traces (default: the class name). The name must be unique in a runtime and
/// stable across versions of the code, since it addresses state.
/// </summary>
/// <param name="name">The entity type's name.</param>
[AttributeUsage(AttributeTargets.Class, AllowMultiple = false, Inherited = false)]
public sealed class EntityTypeAttribute(string name) : Attribute
{
    /// <summary>The entity type's name.</summary>
    public string Name { get; } = name;
}

/// <summary>The state of a stateless entity (a "function"), and the result of a method that returns <see cref="Task"/>.</summary>
public readonly record struct Unit;
