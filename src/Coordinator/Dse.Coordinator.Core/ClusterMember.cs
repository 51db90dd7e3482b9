namespace Dse;

/// <summary>A registered participant of a <see cref="ClusterCoordinator"/>. Guarded by the coordinator's lock.</summary>
internal sealed class ClusterMember(long lastSeen)
{
    /// <summary>When the coordinator last heard from it (a <see cref="TimeProvider"/> timestamp).</summary>
    public long LastSeen { get; set; } = lastSeen;

    /// <summary>Whether it was removed: its requests are refused until it connects again.</summary>
    public bool Removed { get; set; }

    /// <summary>Why it was removed, for the refusals' messages.</summary>
    public string RemovedBecause { get; set; } = string.Empty;

    /// <summary>What its latest heartbeat with statistics reported, for inspection only; <c>null</c> before one.</summary>
    public ParticipantStatistics? Statistics { get; set; }

    /// <summary>When <see cref="Statistics"/> arrived (a <see cref="TimeProvider"/> timestamp).</summary>
    public long StatisticsReceived { get; set; }

    /// <summary>A heartbeat at <paramref name="now"/>, with the statistics it carried, if any.</summary>
    public void Heard(long now, ParticipantStatistics? statistics)
    {
        LastSeen = now;
        if (statistics is not null)
        {
            Statistics = statistics;
            StatisticsReceived = now;
        }
    }
}
