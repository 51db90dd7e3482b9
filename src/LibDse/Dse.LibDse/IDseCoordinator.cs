namespace Dse;

/// <summary>
/// The coordinator as participants see it. Implemented in process by <c>ClusterCoordinator</c> (Dse.Coordinator.Core)
/// and, out of process, by <c>GrpcCoordinatorClient</c> (Dse.Coordinator.Client); the runtime calls nothing else, so
/// either drops in.
/// </summary>
public interface IDseCoordinator
{
    /// <summary>
    /// Registers a participant, or, if the id is already registered, treats the call as a restart after a failure:
    /// computes and persists a rollback decision under a new world-line before answering.
    /// </summary>
    ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default);

    /// <summary>Reports a durably persisted version with its dependency fragment.</summary>
    /// <exception cref="DseCoordinatorException">The participant is unknown or the report is malformed.</exception>
    ValueTask<ReportOutcome> ReportPersistedAsync(long objectId, VersionReport report, CancellationToken cancellationToken = default);

    /// <summary>
    /// Tells the coordinator a participant finished applying the decision of <paramref name="worldLine"/> and kept its
    /// versions up to <paramref name="keptThrough"/> (its cut, or more when nothing it held depended on lost state).
    /// </summary>
    ValueTask AcknowledgeRollbackAsync(long objectId, long worldLine, long keptThrough, CancellationToken cancellationToken = default);

    /// <summary>
    /// After a coordinator restart (a higher <see cref="ClusterState.Incarnation"/>), hands the new coordinator this
    /// participant's durable, uncommitted fragments and its view of the boundary. Idempotent: the latest resync of a
    /// participant replaces its earlier one.
    /// </summary>
    /// <exception cref="DseCoordinatorException">The participant is unknown or removed, or the request is malformed.</exception>
    ValueTask<ClusterState> ResyncAsync(ResyncRequest request, CancellationToken cancellationToken = default);

    /// <summary>
    /// Tells the coordinator the participant is alive. A coordinator with a heartbeat timeout removes a participant it
    /// has not heard from (by any call) within the timeout.
    /// </summary>
    /// <exception cref="DseCoordinatorException">The participant is unknown or was removed.</exception>
    ValueTask HeartbeatAsync(long objectId, CancellationToken cancellationToken = default);

    /// <summary>
    /// A heartbeat that also hands the coordinator the participant's <paramref name="statistics"/>, which it keeps for
    /// dashboards and tools; they never affect a decision. A coordinator that keeps none treats it as a plain heartbeat.
    /// </summary>
    /// <exception cref="DseCoordinatorException">
    /// The participant is unknown or was removed, or the statistics break <see cref="ParticipantStatistics"/>' rules
    /// (<see cref="CoordinatorErrorCode.InvalidRequest"/>; nothing changes, not even the time it was last heard from).
    /// </exception>
    ValueTask HeartbeatAsync(long objectId, ParticipantStatistics statistics, CancellationToken cancellationToken = default) =>
        HeartbeatAsync(objectId, cancellationToken);

    /// <summary>The current cluster state.</summary>
    ValueTask<ClusterState> GetStateAsync(CancellationToken cancellationToken = default);

    /// <summary>Completes with the cluster state once its epoch is greater than <paramref name="knownEpoch"/>.</summary>
    ValueTask<ClusterState> WaitForChangeAsync(long knownEpoch, CancellationToken cancellationToken = default);
}
