namespace Dse;

/// <summary>
/// A recovery dependency on one StateObject's version: the holder depends on (<see cref="ObjectId"/>, <see cref="Version"/>)
/// and, by precedence, on every earlier version of that object in the same lineage.
/// </summary>
/// <param name="ObjectId">The predetermined id of the StateObject depended on.</param>
/// <param name="Version">The version depended on.</param>
public readonly record struct Dependency(long ObjectId, long Version);
