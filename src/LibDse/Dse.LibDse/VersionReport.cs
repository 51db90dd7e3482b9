namespace Dse;

/// <summary>
/// A persisted version as reported to the coordinator: its world-line at persist time and the dependency fragment
/// (the versions of other StateObjects it received messages from).
/// </summary>
/// <param name="Version">The persisted version.</param>
/// <param name="WorldLine">The world-line the StateObject was in when it persisted the version.</param>
/// <param name="Dependencies">Dependencies on other StateObjects (one entry per object, its highest version).</param>
public sealed record VersionReport(long Version, long WorldLine, IReadOnlyList<Dependency> Dependencies);
