namespace Dse.Darq.Tests;

/// <summary>
/// One DARQ's link to the coordinator, cut when its storage crashes. A crash cut makes the devices acknowledge writes they
/// lose, but the instance keeps running until it is disposed: without this link it could still report a version whose
/// commit the cut lost, and the coordinator would then ask the restarted DARQ to restore a version its storage never held.
/// A crashed process says nothing more, so once cut every call fails as an unreachable coordinator does.
/// </summary>
internal sealed class CrashableCoordinatorLink(IDseCoordinator inner) : IDseCoordinator
{
    private volatile bool _cut;

    /// <summary>From now on no call reaches the coordinator.</summary>
    public void Cut() => _cut = true;

    public ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default) =>
        Alive() ? inner.ConnectAsync(request, cancellationToken) : Down<ConnectResponse>();

    public ValueTask<ReportOutcome> ReportPersistedAsync(long objectId, VersionReport report, CancellationToken cancellationToken = default) =>
        Alive() ? inner.ReportPersistedAsync(objectId, report, cancellationToken) : Down<ReportOutcome>();

    public ValueTask AcknowledgeRollbackAsync(long objectId, long worldLine, long keptThrough, CancellationToken cancellationToken = default) =>
        Alive() ? inner.AcknowledgeRollbackAsync(objectId, worldLine, keptThrough, cancellationToken) : ValueTask.FromException(Unavailable());

    public ValueTask<ClusterState> ResyncAsync(ResyncRequest request, CancellationToken cancellationToken = default) =>
        Alive() ? inner.ResyncAsync(request, cancellationToken) : Down<ClusterState>();

    public ValueTask HeartbeatAsync(long objectId, CancellationToken cancellationToken = default) =>
        Alive() ? inner.HeartbeatAsync(objectId, cancellationToken) : ValueTask.FromException(Unavailable());

    public ValueTask<ClusterState> GetStateAsync(CancellationToken cancellationToken = default) =>
        Alive() ? inner.GetStateAsync(cancellationToken) : Down<ClusterState>();

    public ValueTask<ClusterState> WaitForChangeAsync(long knownEpoch, CancellationToken cancellationToken = default) =>
        Alive() ? inner.WaitForChangeAsync(knownEpoch, cancellationToken) : Down<ClusterState>();

    private bool Alive() => !_cut;

    private static ValueTask<T> Down<T>() => ValueTask.FromException<T>(Unavailable());

    private static DseCoordinatorException Unavailable() => new(CoordinatorErrorCode.Unavailable, "The test crashed this participant.");
}
