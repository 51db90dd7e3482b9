namespace Dse.Functions.Engine;

/// <summary>
/// One entity: its type in a runtime and its key, with the key's stable hash (the same in every process: it picks the
/// partition). Equal addresses name the same state.
/// </summary>
internal readonly struct EntityAddress(EntityType type, object key, ulong hash) : IEquatable<EntityAddress>
{
    public EntityType Type { get; } = type;

    public object Key { get; } = key;

    public ulong Hash { get; } = hash;

    public bool Equals(EntityAddress other) =>
        Hash == other.Hash && ReferenceEquals(Type, other.Type) && Key.Equals(other.Key);

    public override bool Equals(object? obj) => obj is EntityAddress other && Equals(other);

    public override int GetHashCode() => (int)Hash ^ (int)(Hash >> 32);

    public static bool operator ==(EntityAddress left, EntityAddress right) => left.Equals(right);

    public static bool operator !=(EntityAddress left, EntityAddress right) => !left.Equals(right);

    public override string ToString() => $"{Type.Name}({Key})";
}
