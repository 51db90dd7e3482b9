namespace Dse;

/// <summary>
/// The cluster state as a <see cref="StateObject"/> last heard it from the coordinator, and the signal of its next
/// change. Lock-free. Invariant: the view is replaced only by a state of a higher epoch, so it never goes back; every
/// replacement completes the signal that was current before it.
/// </summary>
internal sealed class ClusterViewCell
{
    private ClusterState _view = ClusterState.Empty;
    private TaskCompletionSource _changed = NewSignal();

    /// <summary>The current view.</summary>
    public ClusterState Current => Volatile.Read(ref _view);

    /// <summary>Completes at the next change (or wake-up); take it before checking a condition, then await it.</summary>
    public Task NextChange => Volatile.Read(ref _changed).Task;

    /// <summary>Sets the view the connect answered with, before anything else can read or replace it.</summary>
    public void Initialize(ClusterState state) => Volatile.Write(ref _view, state);

    /// <summary>Replaces the view if <paramref name="state"/> is newer; concurrent callers never move it back.</summary>
    public void Publish(ClusterState state)
    {
        while (true)
        {
            var current = Volatile.Read(ref _view);
            if (state.Epoch <= current.Epoch)
            {
                return;
            }

            // A restarted coordinator publishes only the floors it has heard of so far; what an earlier incarnation
            // published as committed stays committed, so the view keeps the higher of the two until recovery ended
            // (every state of a recovering incarnation, not only its first, or a resync could lose the floors).
            bool merge = current.Committed.Count > 0 && (state.Incarnation > current.Incarnation || (state.Incarnation == current.Incarnation && state.IsRecovering));
            var next = merge ? WithCommittedFloors(state, current.Committed) : state;
            if (Interlocked.CompareExchange(ref _view, next, current) == current)
            {
                Pulse();
                return;
            }
        }
    }

    /// <summary>Wakes the waiters with a new signal for the next change: something they check besides the view changed.</summary>
    public void Pulse() => Interlocked.Exchange(ref _changed, NewSignal()).TrySetResult();

    /// <summary>Completes the current signal for good (a fault or dispose): waiters wake and find the owner stopped.</summary>
    public void WakeAll() => Volatile.Read(ref _changed).TrySetResult();

    private static TaskCompletionSource NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    private static ClusterState WithCommittedFloors(ClusterState state, IReadOnlyDictionary<long, long> floors)
    {
        Dictionary<long, long>? merged = null;
        foreach (var (id, floor) in floors)
        {
            if (floor > state.CommittedVersion(id))
            {
                merged ??= new Dictionary<long, long>(state.Committed);
                merged[id] = floor;
            }
        }

        return merged is null ? state : state with { Committed = merged };
    }
}
