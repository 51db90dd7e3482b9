namespace Dse.Hosting.Tests;

/// <summary>
/// An in-process coordinator behind a switch: while closed, connects fail as an unreachable coordinator does
/// (<see cref="CoordinatorErrorCode.Unavailable"/>); a refusal code makes connects fail for good; reports can be
/// swallowed so that nothing ever commits, or held back until the test releases them.
/// </summary>
internal sealed class GatedCoordinator(ClusterCoordinator inner) : IDseCoordinator
{
    private readonly TaskCompletionSource _refusedTwice = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private int _refused;
    private volatile bool _open;

    // While set and not completed, reports wait for it before they reach the coordinator.
    private volatile TaskCompletionSource? _reportsHeld;

    public GatedCoordinator()
        : this(new ClusterCoordinator())
    {
    }

    public ClusterCoordinator Inner { get; } = inner;

    /// <summary>When set, every connect is refused with this code.</summary>
    public CoordinatorErrorCode? Refusal { get; set; }

    /// <summary>When set, reports are acknowledged but never reach the coordinator, so nothing commits.</summary>
    public bool SwallowReports { get; set; }

    /// <summary>When set, state queries answer as a coordinator recovering from its own restart does.</summary>
    public bool Recovering { get; set; }

    /// <summary>Completes once two connects were turned away while closed.</summary>
    public Task RefusedTwice => _refusedTwice.Task;

    public void Open() => _open = true;

    /// <summary>Makes reports wait (nothing commits meanwhile) until <see cref="ReleaseReports"/>.</summary>
    public void HoldReports() => _reportsHeld = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Lets the held reports, and every later one, through.</summary>
    public void ReleaseReports() => _reportsHeld?.TrySetResult();

    public ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default)
    {
        if (Refusal is { } code)
        {
            throw new DseCoordinatorException(code, $"Participant {request.ObjectId} refused by the test.");
        }

        if (!_open)
        {
            if (Interlocked.Increment(ref _refused) >= 2)
            {
                _refusedTwice.TrySetResult();
            }

            throw new DseCoordinatorException(CoordinatorErrorCode.Unavailable, "The test coordinator is down.");
        }

        return Inner.ConnectAsync(request, cancellationToken);
    }

    public async ValueTask<ReportOutcome> ReportPersistedAsync(long objectId, VersionReport report, CancellationToken cancellationToken = default)
    {
        if (SwallowReports)
        {
            return ReportOutcome.Accepted;
        }

        if (_reportsHeld is { } held)
        {
            await held.Task.WaitAsync(cancellationToken);
        }

        return await Inner.ReportPersistedAsync(objectId, report, cancellationToken);
    }

    public ValueTask AcknowledgeRollbackAsync(long objectId, long worldLine, long keptThrough, CancellationToken cancellationToken = default) =>
        Inner.AcknowledgeRollbackAsync(objectId, worldLine, keptThrough, cancellationToken);

    public ValueTask<ClusterState> ResyncAsync(ResyncRequest request, CancellationToken cancellationToken = default) =>
        Inner.ResyncAsync(request, cancellationToken);

    public ValueTask HeartbeatAsync(long objectId, CancellationToken cancellationToken = default) =>
        Inner.HeartbeatAsync(objectId, cancellationToken);

    public async ValueTask<ClusterState> GetStateAsync(CancellationToken cancellationToken = default)
    {
        if (!_open && Refusal is null)
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.Unavailable, "The test coordinator is down.");
        }

        var state = await Inner.GetStateAsync(cancellationToken);
        return Recovering ? state with { IsRecovering = true } : state;
    }

    public ValueTask<ClusterState> WaitForChangeAsync(long knownEpoch, CancellationToken cancellationToken = default) =>
        Inner.WaitForChangeAsync(knownEpoch, cancellationToken);
}
