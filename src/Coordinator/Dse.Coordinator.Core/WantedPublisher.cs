namespace Dse;

/// <summary>
/// Publishes a <see cref="ClusterCoordinator"/>'s changes of wanted versions (<see cref="ClusterState.Wanted"/>) that
/// nothing else publishes: a change alone goes out after <see cref="Delay"/>, batched, because by then most entries are
/// gone (the participant reported that far on its own). Every published state carries the wanted versions anyway.
/// </summary>
/// <remarks>
/// Guarded by the coordinator's lock. Invariants: the published count is the graph's
/// <see cref="DependencyGraph.WantedChanges"/> as of the last published state; at most one timer is pending.
/// </remarks>
internal sealed class WantedPublisher(ClusterCoordinator coordinator)
{
    /// <summary>How long a change of wanted versions alone waits to be published.</summary>
    public static readonly TimeSpan Delay = TimeSpan.FromMilliseconds(100);

    private ITimer? _timer;
    private int _published;

    /// <summary>Whether the wanted versions changed since the last published state. Under the coordinator's lock.</summary>
    public bool HasUnpublished => coordinator.Graph.WantedChanges != _published;

    /// <summary>A state was published: it carries the current wanted versions. Under the coordinator's lock.</summary>
    public void OnPublished() => _published = coordinator.Graph.WantedChanges;

    /// <summary>Starts the delay unless nothing changed or it runs already. Under the coordinator's lock.</summary>
    public void ScheduleIfChanged()
    {
        if (HasUnpublished)
        {
            _timer ??= coordinator.Time.CreateTimer(static s => ((WantedPublisher)s!).OnTimer(), this, Delay, Timeout.InfiniteTimeSpan);
        }
    }

    /// <summary>Stops a pending delay; nothing is published for it.</summary>
    public void Stop()
    {
        ITimer? timer;
        lock (coordinator.Sync)
        {
            (timer, _timer) = (_timer, null);
        }

        timer?.Dispose();
    }

    private void OnTimer()
    {
        lock (coordinator.Sync)
        {
            _timer?.Dispose();
            _timer = null;
            if (!coordinator.IsFaulted && !coordinator.IsRecovering && HasUnpublished)
            {
                coordinator.Publish();
            }
        }
    }
}
