namespace Dse;

/// <summary>What a <see cref="DseHeader"/> carries.</summary>
public enum DseHeaderKind : byte
{
    /// <summary>No header (the default value): a message from outside DSE, which adds no dependency.</summary>
    None = 0,

    /// <summary>The single vertex a StateObject's action produced the message from.</summary>
    Origin = 1,

    /// <summary>The dependency set of an sthread.</summary>
    DependencySet = 2,
}
