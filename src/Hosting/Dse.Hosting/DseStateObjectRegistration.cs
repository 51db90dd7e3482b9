namespace Dse.Hosting;

/// <summary>One <c>AddStateObject</c> call: the type, its own id if it has one, and how to build it.</summary>
internal sealed class DseStateObjectRegistration(Type type, long? objectId, Func<IServiceProvider, DseOptions, StateObject> factory)
{
    public Type Type { get; } = type;

    /// <summary>The id given at registration; <c>null</c> takes <see cref="DseHostingOptions.ObjectId"/>.</summary>
    public long? ObjectId { get; } = objectId;

    public Func<IServiceProvider, DseOptions, StateObject> Factory { get; } = factory;

    public long EffectiveId(DseHostingOptions options) => ObjectId ?? options.ObjectId;

    /// <summary>How validation messages name the registration.</summary>
    public string Describe() => ObjectId is { } id
        ? $"{Type.Name} (objectId {id})"
        : $"{Type.Name} (id from {DseHostingOptions.Key(nameof(DseHostingOptions.ObjectId))})";
}
