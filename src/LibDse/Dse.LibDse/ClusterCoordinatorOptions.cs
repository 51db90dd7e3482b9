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

    /// <summary>Logger factory. Default: no logging.</summary>
    public ILoggerFactory? LoggerFactory { get; set; }

    /// <summary>Throws an <see cref="ArgumentException"/> naming the first invalid option.</summary>
    public void Validate()
    {
        if (MaxRetainedDecisions < 1)
        {
            throw new ArgumentException($"{nameof(ClusterCoordinatorOptions)}.{nameof(MaxRetainedDecisions)} must be at least 1 (got {MaxRetainedDecisions}).", nameof(MaxRetainedDecisions));
        }

        if (ExpectedParticipants is { Count: 0 })
        {
            throw new ArgumentException($"{nameof(ClusterCoordinatorOptions)}.{nameof(ExpectedParticipants)} must be null or name at least one participant.", nameof(ExpectedParticipants));
        }
    }
}
