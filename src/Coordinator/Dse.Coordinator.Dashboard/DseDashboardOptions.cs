using Dse.Coordinator.Client;
using Dse.Grpc;

namespace Dse.Coordinator.Dashboard;

/// <summary>Options of the dashboard that <c>MapDseDashboard</c> mounts.</summary>
public sealed class DseDashboardOptions
{
    /// <summary>
    /// The coordinator to show. Default <c>null</c>: the <see cref="CoordinatorServer"/> registered by
    /// <c>AddDseCoordinator</c>, or else a <see cref="ClusterCoordinator"/> registered as a service, resolved at the
    /// first request.
    /// </summary>
    public ClusterCoordinator? Coordinator { get; set; }

    /// <summary>
    /// A coordinator in another process to show instead, read through its Inspect RPC once per
    /// <see cref="RefreshPeriod"/> and open page (give the client an operator's or a participant's token when the
    /// coordinator has a participants file). Such a dashboard is read-only: remove participants with <c>dse remove</c>
    /// or on the coordinator host's own dashboard. The caller owns the client. Default <c>null</c>.
    /// </summary>
    public GrpcCoordinatorClient? RemoteCoordinator { get; set; }

    /// <summary>
    /// The participants file whose operator tokens may remove participants from the dashboard. Default <c>null</c>: the
    /// <see cref="CoordinatorServer.Credentials"/> of the registered coordinator server, if any. Without credentials the
    /// dashboard is read-only: removal is refused.
    /// </summary>
    public DseCredentials? Credentials { get; set; }

    /// <summary>How often the event stream pushes the view (heartbeat ages change even when nothing else does). Default 500 ms.</summary>
    public TimeSpan RefreshPeriod { get; set; } = TimeSpan.FromMilliseconds(500);

    /// <summary>How many of each participant's newest uncommitted versions the view carries (the dependency graph's depth). Default 16.</summary>
    public int MaxVersionsPerParticipant { get; set; } = 16;

    /// <summary>Checks the options.</summary>
    /// <exception cref="ArgumentException">An option is out of range; the message names it.</exception>
    public void Validate()
    {
        if (RemoteCoordinator is not null && (Coordinator is not null || Credentials is not null))
        {
            throw new ArgumentException($"RemoteCoordinator shows a coordinator of another process, read-only: it excludes Coordinator and Credentials.", nameof(RemoteCoordinator));
        }

        if (RefreshPeriod < TimeSpan.FromMilliseconds(50) || RefreshPeriod > TimeSpan.FromMinutes(1))
        {
            throw new ArgumentException($"RefreshPeriod must be from 50 ms to 1 minute (got {RefreshPeriod}).", nameof(RefreshPeriod));
        }

        if (MaxVersionsPerParticipant is < 0 or > 1024)
        {
            throw new ArgumentException($"MaxVersionsPerParticipant must be from 0 to 1024 (got {MaxVersionsPerParticipant}).", nameof(MaxVersionsPerParticipant));
        }
    }
}
