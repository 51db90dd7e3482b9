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
    /// A copy of heartbeat statistics, checked after it was taken, so that an in-process caller changing its lists
    /// meanwhile or later cannot have statistics stored that break their rules, nor change what an inspection shows.
    /// </summary>
    /// <exception cref="DseCoordinatorException"><see cref="CoordinatorErrorCode.InvalidRequest"/> naming the broken rule.</exception>
    public static ParticipantStatistics AcceptStatistics(long objectId, ParticipantStatistics statistics)
    {
        ArgumentNullException.ThrowIfNull(statistics);
        var waits = statistics.BarrierWaits;
        var copy = statistics with
        {
            BarrierWaits = waits is null ? null! : waits with
            {
                UpperBoundsMilliseconds = waits.UpperBoundsMilliseconds is null ? null! : [.. waits.UpperBoundsMilliseconds],
                Counts = waits.Counts is null ? null! : [.. waits.Counts],
            },
            Queues = statistics.Queues is null ? null! : [.. statistics.Queues],
        };
        if (ParticipantStatistics.Problem(copy) is { } problem)
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.InvalidRequest, $"The heartbeat of participant {objectId} carries statistics that break their rules: {problem}");
        }

        return copy;
    }
}
