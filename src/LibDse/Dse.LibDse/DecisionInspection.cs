namespace Dse;

/// <summary>A retained rollback decision and, when this coordinator made it, what each participant lost to it.</summary>
/// <param name="Decision">The decision: world-line, cause and cut.</param>
/// <param name="ReportedBefore">
/// Per participant, the highest version it had reported when the decision was made; <c>null</c> for a decision this
/// incarnation did not make (replayed from the journal, or a cold start's).
/// </param>
public sealed record DecisionInspection(RollbackDecision Decision, IReadOnlyDictionary<long, long>? ReportedBefore)
{
    /// <summary>
    /// The highest reported version of <paramref name="objectId"/> that the decision rolled back (every reported version
    /// above the cut, up to this one, is lost); 0 when it lost nothing it had reported, <c>null</c> when
    /// <see cref="ReportedBefore"/> is unknown.
    /// </summary>
    public long? LostThrough(long objectId) =>
        ReportedBefore is null ? null
        : ReportedBefore.TryGetValue(objectId, out long before) && before > Decision.CutFor(objectId) ? before
        : 0;
}
