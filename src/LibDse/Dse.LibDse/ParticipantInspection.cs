namespace Dse;

/// <summary>One participant as a <see cref="ClusterInspection"/> shows it.</summary>
/// <param name="ObjectId">The participant's id.</param>
/// <param name="Removed">Whether it is removed (its requests are refused until it connects again).</param>
/// <param name="RemovedBecause">Why it was removed; empty unless <paramref name="Removed"/>.</param>
/// <param name="SinceHeard">How long ago the coordinator last heard from it (any call counts).</param>
/// <param name="Committed">Its committed version: inside the recoverable boundary, it never rolls back.</param>
/// <param name="Persisted">The highest version it reported persisted (its committed version if none is open).</param>
/// <param name="ReportedWorldLine">
/// The highest world-line it reported a version in: the world-line its state is on as far as the coordinator knows
/// (0 before its first report to this coordinator incarnation, or before any decision).
/// </param>
/// <param name="UncommittedCount">How many reported versions are not committed yet.</param>
/// <param name="Uncommitted">
/// The newest reported but uncommitted versions, ascending, with the world-line each was reported in and its
/// dependencies; at most the number the inspection was asked for.
/// </param>
/// <param name="Statistics">
/// What its latest heartbeat reported about itself (in-memory version, barrier waits, queues), or <c>null</c> when no
/// heartbeat to this coordinator incarnation carried any.
/// </param>
/// <param name="StatisticsAge">How long ago <paramref name="Statistics"/> arrived; <c>null</c> without statistics.</param>
public sealed record ParticipantInspection(
    long ObjectId,
    bool Removed,
    string RemovedBecause,
    TimeSpan SinceHeard,
    long Committed,
    long Persisted,
    long ReportedWorldLine,
    int UncommittedCount,
    IReadOnlyList<VersionReport> Uncommitted,
    ParticipantStatistics? Statistics,
    TimeSpan? StatisticsAge);
