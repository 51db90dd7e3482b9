namespace Dse;

/// <summary>What a StateObject tells the coordinator when it (re)connects: its id and the versions its storage holds.</summary>
/// <param name="ObjectId">The predetermined id; connecting with an id already registered means the participant restarted.</param>
/// <param name="PersistedVersions">Every unpruned version in storage, in ascending order, with its fragment.</param>
public sealed record ConnectRequest(long ObjectId, IReadOnlyList<VersionReport> PersistedVersions);
