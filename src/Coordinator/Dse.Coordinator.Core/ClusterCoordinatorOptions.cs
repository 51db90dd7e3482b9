using Microsoft.Extensions.Logging;

namespace Dse;

/// <summary>Options of a <see cref="ClusterCoordinator"/>; validated when it is created.</summary>
public sealed class ClusterCoordinatorOptions
{
    /// <summary>How many recent decisions the cluster state carries. Default 64; at least 1.</summary>
    public int MaxRetainedDecisions { get; set; } = 64;

    /// <summary>
    /// The predetermined participants of a cluster that may restart as a whole (cold start). When set, the first
    /// connects wait until every expected participant has connected and listed its storage; each then restores the
    /// greatest closure over everyone's persisted versions, so no participant resumes from a version that depends on
    /// state another one lost. Default <c>null</c>: each participant restores its latest version as it connects, which
    /// is only safe when the others cannot have lost state it depends on (a fresh cluster, or storage that was
    /// committed in full before the shutdown).
    /// </summary>
    public IReadOnlyCollection<long>? ExpectedParticipants { get; set; }

    /// <summary>
    /// How long the coordinator waits to hear from a participant (any call counts) before it removes it: its unreported
    /// state counts as lost, dependents roll back, and it must restart to rejoin. Default <c>null</c>: never remove
    /// (the embedded use, where participants live in the coordinator's process). The coordinator host sets 10 s.
    /// Recovery never times out this way: see docs/coordinator.md.
    /// </summary>
    public TimeSpan? HeartbeatTimeout { get; set; }

    /// <summary>Clock for heartbeats. Default <see cref="TimeProvider.System"/>.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>Logger factory. Default: no logging.</summary>
    public ILoggerFactory? LoggerFactory { get; set; }

    /// <summary>Throws an <see cref="ArgumentException"/> naming the first invalid option.</summary>
    public void Validate()
    {
        if (MaxRetainedDecisions < 1)
        {
            throw new ArgumentException($"{nameof(ClusterCoordinatorOptions)}.{nameof(MaxRetainedDecisions)} must be at least 1 (got {MaxRetainedDecisions}).", nameof(MaxRetainedDecisions));
        }

        if (HeartbeatTimeout is { } timeout && (timeout < TimeSpan.FromMilliseconds(10) || timeout > TimeSpan.FromHours(1)))
        {
            throw new ArgumentException($"{nameof(ClusterCoordinatorOptions)}.{nameof(HeartbeatTimeout)} must be null or between 10 ms and 1 hour (got {timeout}).", nameof(HeartbeatTimeout));
        }

        if (TimeProvider is null)
        {
            throw new ArgumentException($"{nameof(ClusterCoordinatorOptions)}.{nameof(TimeProvider)} must not be null.", nameof(TimeProvider));
        }

        if (ExpectedParticipants is { Count: 0 })
        {
            throw new ArgumentException($"{nameof(ClusterCoordinatorOptions)}.{nameof(ExpectedParticipants)} must be null or name at least one participant.", nameof(ExpectedParticipants));
        }
    }
}
