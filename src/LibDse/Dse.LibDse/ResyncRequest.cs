namespace Dse;

/// <summary>
/// What a participant sends a coordinator that restarted (a new incarnation): everything the new coordinator cannot
/// know from its log. See docs/coordinator.md, "Coordinator recovery".
/// </summary>
/// <param name="ObjectId">The participant.</param>
/// <param name="WorldLine">The world-line the participant is in: it has applied every decision up to this one.</param>
/// <param name="DurableVersions">Its durable, uncommitted versions in ascending order, with their fragments.</param>
/// <param name="CommittedView">Its view of the recoverable boundary: a boundary an earlier incarnation really published.</param>
public sealed record ResyncRequest(long ObjectId, long WorldLine, IReadOnlyList<VersionReport> DurableVersions, IReadOnlyDictionary<long, long> CommittedView);
