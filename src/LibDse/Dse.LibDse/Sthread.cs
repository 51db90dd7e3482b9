namespace Dse;

/// <summary>
/// A lightweight thread of execution derived from a StateObject's state (see <see cref="StateObject.Detach"/>): it
/// carries the set of versions it observed instead of being a vertex of the graph, so it can run long or asynchronous
/// work without holding up persistence. It interacts with others only through headers.
/// </summary>
/// <remarks>
/// An sthread is one logical flow: use it from one flow at a time (not concurrently). It learns about rollbacks
/// through its owner's view of the cluster; once any version it observed is rolled back it is dead for good.
/// </remarks>
public sealed class Sthread
{
    private readonly StateObject _owner;
    private long _worldLine;
    private Dependency[] _deps;
    private int _count;
    private DseRolledBackException? _rolledBack;

    internal Sthread(StateObject owner, long worldLine, Dependency origin)
    {
        _owner = owner;
        _worldLine = worldLine;
        _deps = [origin];
        _count = 1;
    }

    /// <summary>The StateObject this sthread was detached from.</summary>
    public StateObject Owner => _owner;

    /// <summary>The world-line the sthread is in.</summary>
    public long WorldLine => _worldLine;

    /// <summary>Whether a rollback removed state this sthread observed.</summary>
    public bool IsRolledBack => _rolledBack is not null || !TryCatchUp();

    /// <summary>The versions this sthread observed and that were not yet passed by a barrier.</summary>
    public ReadOnlySpan<Dependency> Dependencies => _deps.AsSpan(0, _count);

    /// <summary>Receives a message carrying <paramref name="header"/> if possible without waiting.</summary>
    /// <exception cref="DseRolledBackException">The sthread was rolled back.</exception>
    public SthreadStatus TryReceive(in DseHeader header)
    {
        // One view for both the catch-up and the committed check: a newer view could call a reused number committed.
        var view = _owner.ClusterView;
        CatchUp(view);
        if (header.Kind == DseHeaderKind.None)
        {
            return SthreadStatus.Completed;
        }

        if (header.WorldLine < _worldLine && !SurvivedSince(header, view))
        {
            DseTelemetry.MessagesDiscarded.Add(1);
            return SthreadStatus.Discard;
        }

        if (header.WorldLine > _worldLine)
        {
            return SthreadStatus.Pending;
        }

        bool sameLineage = view.WorldLine == _worldLine;
        for (int i = 0; i < header.DependencyCount; i++)
        {
            var d = header.GetDependency(i);
            if (!(sameLineage && view.IsCommitted(d)))
            {
                AddDependency(d);
            }
        }

        return SthreadStatus.Completed;
    }

    /// <summary>
    /// Receives a message carrying <paramref name="header"/>, waiting while it comes from a world-line not reached yet.
    /// Returns <c>false</c> if the message comes from rolled-back state and must be discarded.
    /// </summary>
    /// <exception cref="DseRolledBackException">The sthread was rolled back.</exception>
    public ValueTask<bool> ReceiveAsync(DseHeader header, CancellationToken cancellationToken = default) => ReceiveAsync(header, null, cancellationToken);

    /// <summary>
    /// <see cref="ReceiveAsync(DseHeader, CancellationToken)"/> with each check taken under <paramref name="guard"/> (when
    /// given) and every wait outside it: calls under one binding share an sthread and its guard.
    /// </summary>
    internal async ValueTask<bool> ReceiveAsync(DseHeader header, SemaphoreSlim? guard, CancellationToken cancellationToken)
    {
        while (true)
        {
            var next = _owner.NextChange;
            SthreadStatus status;
            if (guard is null)
            {
                status = TryReceive(header);
            }
            else
            {
                await guard.WaitAsync(cancellationToken).ConfigureAwait(false);
                try
                {
                    status = TryReceive(header);
                }
                finally
                {
                    guard.Release();
                }
            }

            switch (status)
            {
                case SthreadStatus.Completed:
                    return true;
                case SthreadStatus.Discard:
                    return false;
                default:
                    await next.WaitAsync(cancellationToken).ConfigureAwait(false);
                    _owner.ThrowIfFaulted();
                    break;
            }
        }
    }

    /// <summary>Produces the header for a message this sthread sends: its world-line and dependency set.</summary>
    /// <exception cref="DseRolledBackException">The sthread was rolled back.</exception>
    public DseHeader Send()
    {
        CatchUp(_owner.ClusterView);
        return CurrentHeader();
    }

    /// <summary>Checks the barrier without waiting: <see cref="SthreadStatus.Completed"/> once everything observed is recoverable.</summary>
    /// <exception cref="DseRolledBackException">The sthread was rolled back.</exception>
    public SthreadStatus TryBarrier()
    {
        var view = _owner.ClusterView;
        CatchUp(view);
        if (_worldLine != view.WorldLine)
        {
            return SthreadStatus.Pending;   // the owner is still applying a decision; the view's boundary is another lineage's
        }

        for (int i = 0; i < _count; i++)
        {
            if (!view.IsCommitted(_deps[i]))
            {
                return SthreadStatus.Pending;
            }
        }

        // Everything observed is recoverable for good: the set can start over.
        _count = 0;
        return SthreadStatus.Completed;
    }

    /// <summary>
    /// Completes once everything this sthread observed is inside the recoverable boundary, so what follows can be shown
    /// to the outside world (a reply to a client, a call to a non-speculative service).
    /// </summary>
    /// <exception cref="DseRolledBackException">Something observed was rolled back; what depended on it must not be shown.</exception>
    public ValueTask BarrierAsync(CancellationToken cancellationToken = default) => BarrierAsync(null, cancellationToken);

    /// <summary><see cref="BarrierAsync(CancellationToken)"/> with each check taken under <paramref name="guard"/> (when given) and every wait outside it.</summary>
    internal async ValueTask BarrierAsync(SemaphoreSlim? guard, CancellationToken cancellationToken)
    {
        long started = DseTelemetry.StartBarrierWait();
        while (true)
        {
            var next = _owner.NextChange;
            SthreadStatus status;
            if (guard is null)
            {
                status = TryBarrier();
            }
            else
            {
                await guard.WaitAsync(cancellationToken).ConfigureAwait(false);
                try
                {
                    status = TryBarrier();
                }
                finally
                {
                    guard.Release();
                }
            }

            if (status == SthreadStatus.Completed)
            {
                DseTelemetry.EndBarrierWait(started, _owner.Statistics);
                return;
            }

            await next.WaitAsync(cancellationToken).ConfigureAwait(false);
            _owner.ThrowIfFaulted();
        }
    }

    private bool SurvivedSince(in DseHeader header, ClusterState view)
    {
        if (header.Kind == DseHeaderKind.Origin)
        {
            var origin = header.GetDependency(0);
            return view.Survived(new ReadOnlySpan<Dependency>(in origin), header.WorldLine, _worldLine);
        }

        return view.Survived(header.Dependencies, header.WorldLine, _worldLine);
    }

    internal DseHeader CurrentHeader() => DseHeader.FromDependencies(_worldLine, _deps.AsSpan(0, _count).ToArray());

    /// <summary>Applies decisions newer than the sthread's world-line; false once the sthread is rolled back.</summary>
    internal bool TryCatchUp() => TryCatchUp(_owner.ClusterView);

    private bool TryCatchUp(ClusterState view)
    {
        if (_rolledBack is not null)
        {
            return false;
        }

        // Only through decisions the owner has applied: for versions of the owner, its own outcome decides (it may
        // have kept its state), and that outcome is recorded before its world-line moves.
        long ownerWorldLine = _owner.WorldLine;
        long target = Math.Min(view.WorldLine, ownerWorldLine);
        if (target <= _worldLine)
        {
            return true;
        }

        long expected = _worldLine + 1;
        foreach (var decision in view.Decisions)
        {
            if (decision.WorldLine < expected)
            {
                continue;
            }

            if (decision.WorldLine > target)
            {
                break;
            }

            if (decision.WorldLine > expected)
            {
                break;   // a decision in between is no longer retained
            }

            for (int i = 0; i < _count; i++)
            {
                var d = _deps[i];
                bool survived = d.ObjectId == _owner.Id
                    ? _owner.SurvivedOwnRollback(decision.WorldLine, d.Version) ?? decision.Survives(d)
                    : decision.Survives(d);
                if (!survived)
                {
                    _rolledBack = new DseRolledBackException(decision.WorldLine, d);
                    return false;
                }
            }

            _worldLine = decision.WorldLine;
            expected++;
        }

        if (_worldLine < target)
        {
            // The decisions in between are no longer retained: nothing proves the observed state survived.
            _rolledBack = new DseRolledBackException($"The sthread fell behind world-line {target} by more decisions than the coordinator retains; treating it as rolled back.");
            return false;
        }

        return true;
    }

    private void CatchUp(ClusterState view)
    {
        if (!TryCatchUp(view))
        {
            throw _rolledBack!;
        }
    }

    private void AddDependency(Dependency d)
    {
        for (int i = 0; i < _count; i++)
        {
            if (_deps[i].ObjectId == d.ObjectId)
            {
                if (d.Version > _deps[i].Version)
                {
                    _deps[i] = d;
                }

                return;
            }
        }

        if (_count == _deps.Length)
        {
            Array.Resize(ref _deps, Math.Max(4, _deps.Length * 2));
        }

        _deps[_count++] = d;
    }
}
