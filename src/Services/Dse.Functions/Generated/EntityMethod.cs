using Dse.Functions.Engine;

namespace Dse.Functions;

/// <summary>
/// One method of an entity class as the generated dispatcher describes it: its name, whether it is one-way, and how
/// to call it with deserialized arguments. Written by the source generator.
/// </summary>
public abstract class EntityMethod
{
    private protected EntityMethod(string name, bool oneWay)
    {
        ArgumentException.ThrowIfNullOrEmpty(name);
        Name = name;
        OneWay = oneWay;
    }

    /// <summary>The method's name, unique in its entity class.</summary>
    public string Name { get; }

    /// <summary>Whether the method is one-way (<see cref="OneWayAttribute"/>).</summary>
    public bool OneWay { get; }

    internal abstract Type ArgsType { get; }

    /// <summary>A method that returns a value.</summary>
    /// <typeparam name="TEntity">The entity class.</typeparam>
    /// <typeparam name="TArgs">The argument, a value tuple of the arguments, or <see cref="Unit"/>.</typeparam>
    /// <typeparam name="TResult">The result type.</typeparam>
    /// <param name="name">The method's name.</param>
    /// <param name="oneWay">Whether the method is one-way.</param>
    /// <param name="body">Calls the method.</param>
    /// <returns>The description.</returns>
    public static EntityMethod Create<TEntity, TArgs, TResult>(string name, bool oneWay, Func<TEntity, TArgs, Task<TResult>> body)
        where TEntity : class =>
        new Typed<TEntity, TArgs, TResult>(name, oneWay, body);

    /// <summary>A method that returns no value.</summary>
    /// <typeparam name="TEntity">The entity class.</typeparam>
    /// <typeparam name="TArgs">The argument, a value tuple of the arguments, or <see cref="Unit"/>.</typeparam>
    /// <param name="name">The method's name.</param>
    /// <param name="oneWay">Whether the method is one-way.</param>
    /// <param name="body">Calls the method.</param>
    /// <returns>The description.</returns>
    public static EntityMethod Create<TEntity, TArgs>(string name, bool oneWay, Func<TEntity, TArgs, Task> body)
        where TEntity : class
    {
        ArgumentNullException.ThrowIfNull(body);
        return new Typed<TEntity, TArgs, Unit>(name, oneWay, async (entity, args) =>
        {
            await body(entity, args);
            return default;
        });
    }

    /// <summary>Deserializes the arguments; throws <see cref="EntityArgumentException"/> when they do not parse.</summary>
    internal abstract object? DecodeArgs(ReadOnlyMemory<byte> args);

    /// <summary>Runs the method on <paramref name="entity"/>; the result is serialized.</summary>
    internal abstract Task<byte[]> InvokeAsync(object entity, object? args);

    private sealed class Typed<TEntity, TArgs, TResult>(string name, bool oneWay, Func<TEntity, TArgs, Task<TResult>> body)
        : EntityMethod(name, oneWay)
        where TEntity : class
    {
        internal override Type ArgsType => typeof(TArgs);

        internal override object? DecodeArgs(ReadOnlyMemory<byte> args) => WireFormat.DecodeArgs<TArgs>(args, Name);

        internal override async Task<byte[]> InvokeAsync(object entity, object? args)
        {
            TResult result = await body((TEntity)entity, (TArgs)args!);
            return WireFormat.Encode(result);
        }
    }
}
