namespace Dse;

/// <summary>Rules a <see cref="ClusterCoordinator"/> checks on a request before it touches any state.</summary>
internal static class RequestRules
{
    /// <summary>A listing of persisted versions is positive and strictly ascending.</summary>
    /// <exception cref="DseCoordinatorException"><see cref="CoordinatorErrorCode.InvalidRequest"/> naming the first version out of order.</exception>
    public static void ValidateAscending(long objectId, IReadOnlyList<VersionReport> versions)
    {
        ArgumentNullException.ThrowIfNull(versions);
        long previous = 0;
        foreach (var r in versions)
        {
            if (r is null || r.Version <= previous)
            {
                throw new DseCoordinatorException($"Participant {objectId} listed version {r?.Version} after {previous}; persisted versions must be positive and ascending.");
            }

            previous = r.Version;
        }
    }

    /// <summary>
    /// A copy of heartbeat statistics that keep their rules, so that an in-process caller reusing its lists cannot
    /// change what an inspection shows later.
    /// </summary>
    /// <exception cref="DseCoordinatorException"><see cref="CoordinatorErrorCode.InvalidRequest"/> naming the broken rule.</exception>
    public static ParticipantStatistics AcceptStatistics(long objectId, ParticipantStatistics statistics)
    {
        ArgumentNullException.ThrowIfNull(statistics);
        if (ParticipantStatistics.Problem(statistics) is { } problem)
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.InvalidRequest, $"The heartbeat of participant {objectId} carries statistics that break their rules: {problem}");
        }

        return statistics with
        {
            BarrierWaits = statistics.BarrierWaits with
            {
                UpperBoundsMilliseconds = [.. statistics.BarrierWaits.UpperBoundsMilliseconds],
                Counts = [.. statistics.BarrierWaits.Counts],
            },
            Queues = [.. statistics.Queues],
        };
    }
}
