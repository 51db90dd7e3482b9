namespace Dse;

/// <summary>
/// A version of a <see cref="StateObject"/> handed to Persist and not yet committed. The mutable flags are guarded by
/// the <see cref="VersionBook"/> that holds it.
/// </summary>
internal sealed class VersionRecord(long version, long worldLine, Dependency[] dependencies)
{
    public long Version { get; } = version;

    public long WorldLine { get; } = worldLine;

    public Dependency[] Dependencies { get; } = dependencies;

    /// <summary>Whether Persist reported it durable.</summary>
    public bool Durable { get; set; }

    /// <summary>Whether the coordinator has it (reported, resynchronized, or listed at connect).</summary>
    public bool Reported { get; set; }
}
