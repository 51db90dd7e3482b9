namespace Dse;

/// <summary>A vertex of the dependency graph: one recoverable point of a StateObject.</summary>
/// <param name="ObjectId">The StateObject's predetermined id.</param>
/// <param name="WorldLine">The world-line (failure sequence number) the version belongs to.</param>
/// <param name="Version">The StateObject's local persistence counter.</param>
public readonly record struct Vertex(long ObjectId, long WorldLine, long Version);
