namespace Dse;

/// <summary>
/// What a participant tells the coordinator about itself with each heartbeat, for dashboards and tools
/// (<c>ClusterCoordinator.Inspect</c>, the coordinator's Inspect RPC): its in-memory version and world-line, how long
/// its barriers waited, and the depths of the queues registered with it (<see cref="StateObject.RegisterQueue"/>).
/// The coordinator keeps the latest one per participant in memory and never lets it affect a decision.
/// </summary>
/// <param name="CurrentVersion">The participant's current version, persisted or not; non-negative.</param>
/// <param name="WorldLine">The world-line it is in; non-negative.</param>
/// <param name="BarrierWaits">How long its barriers waited since it started.</param>
/// <param name="Queues">The queues registered with it, at most <see cref="MaxQueues"/>, names unique.</param>
public sealed record ParticipantStatistics(
    long CurrentVersion,
    long WorldLine,
    BarrierWaitDistribution BarrierWaits,
    IReadOnlyList<QueueStatistics> Queues)
{
    /// <summary>The most queues one participant reports.</summary>
    public const int MaxQueues = 64;

    /// <summary>The longest queue name, in characters.</summary>
    public const int MaxQueueNameLength = 128;

    /// <summary>
    /// Why <paramref name="statistics"/> breaks the rules this type's members state, naming the field, or <c>null</c>
    /// when it keeps them. The coordinator refuses a heartbeat whose statistics break them.
    /// </summary>
    public static string? Problem(ParticipantStatistics statistics)
    {
        ArgumentNullException.ThrowIfNull(statistics);
        if (statistics.CurrentVersion < 0)
        {
            return $"current_version is {statistics.CurrentVersion}; versions are non-negative.";
        }

        if (statistics.WorldLine < 0)
        {
            return $"world_line is {statistics.WorldLine}; world-lines are non-negative.";
        }

        if (statistics.BarrierWaits is null)
        {
            return "barrier_waits is missing.";
        }

        if (BarrierWaitDistribution.Problem(statistics.BarrierWaits) is { } barrierProblem)
        {
            return $"barrier_waits: {barrierProblem}";
        }

        if (statistics.Queues is null)
        {
            return "queues is missing.";
        }

        if (statistics.Queues.Count > MaxQueues)
        {
            return $"queues has {statistics.Queues.Count} entries; at most {MaxQueues} are accepted.";
        }

        var names = new HashSet<string>(StringComparer.Ordinal);
        for (int i = 0; i < statistics.Queues.Count; i++)
        {
            var queue = statistics.Queues[i];
            if (queue is null)
            {
                return $"queues[{i}] is missing.";
            }

            if (QueueNameProblem(queue.Name) is { } nameProblem)
            {
                return $"queues[{i}].name {nameProblem}";
            }

            if (!names.Add(queue.Name))
            {
                return $"queues[{i}].name '{queue.Name}' appears twice; names are unique.";
            }

            if (queue.Unconsumed < 0 || queue.InSpilled < 0 || queue.OutPending < 0)
            {
                return $"queues[{i}] ('{queue.Name}') has a negative depth; depths are non-negative.";
            }
        }

        return null;
    }

    /// <summary>Why <paramref name="name"/> cannot name a queue (the rest of a sentence), or <c>null</c>.</summary>
    internal static string? QueueNameProblem(string? name)
    {
        if (string.IsNullOrEmpty(name))
        {
            return "is empty.";
        }

        if (name.Length > MaxQueueNameLength)
        {
            return $"has {name.Length} characters; at most {MaxQueueNameLength} are accepted.";
        }

        foreach (char c in name)
        {
            if (char.IsControl(c))
            {
                return "contains a control character.";
            }
        }

        return null;
    }
}
