namespace Dse;

/// <summary>A version a StateObject's storage holds, with the metadata the runtime passed to Persist.</summary>
/// <param name="Version">The version number.</param>
/// <param name="Metadata">The opaque runtime metadata stored with it (world-line and dependency fragment).</param>
public readonly record struct PersistedVersion(long Version, ReadOnlyMemory<byte> Metadata);
