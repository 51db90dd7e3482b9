namespace Dse.Functions.Engine;

/// <summary>
/// One partition: a thread that owns a share of the entities and runs every epoch in lock step with the others.
/// <list type="number">
/// <item>Start the epoch's roots it owns: transactions rescheduled from the last epoch first, then the record's, by TID.</item>
/// <item>Run calls on the epoch-start snapshot plus each transaction's own writes; when its roots are complete, send Sync1 (its logic aborts).</item>
/// <item>With every Sync1: run Aria's rule on the keys it owns, send Sync2 (its concurrency aborts).</item>
/// <item>With every Sync2: apply the writes of the transactions that committed, answer their clients, and run the aborted ones again in the fallback phase.</item>
/// <item>Fallback: each transaction waits here for the lower aborted ones that touched a key it touched here, runs on committed state, and commits if it touched nothing new; else it moves to the next epoch with its TID. Send Sync3 (the rescheduled).</item>
/// <item>With every Sync3: the epoch is over; partition 0 asks the sequencer for the next.</item>
/// </list>
/// A message for a later stage than the partition's waits until it gets there.
/// </summary>
internal sealed class Partition : ExecutionSite
{
    private readonly EpochEngine _engine;
    private readonly List<SiteMessage> _deferred = [];
    private readonly Dictionary<long, TxLocal> _optimistic = [];
    private readonly Dictionary<long, TxLocal> _fallback = [];
    private readonly HashSet<long> _logicAborts = [];
    private readonly HashSet<long> _concurrencyAborts = [];
    private readonly List<TxRun> _roots = [];
    private List<(TransactionRequest Request, long Tid)> _carry = [];
    private readonly List<(TransactionRequest Request, long Tid)> _carriedHere = [];
    private long _epoch;
    private int _stage = 3; // epoch 0 is over
    private int _rootsPending;
    private int _fallbackPending;
    private int _sync1;
    private int _sync2;
    private int _sync3;
    private bool _anyCarried;

    public Partition(EpochEngine engine, int index)
        : base(engine.Registry, engine.Options.MaxCallDepth)
    {
        _engine = engine;
        Index = index;
    }

    public int Index { get; }

    /// <summary>The position the partition has reached: epoch * 4 + stage (1 executing, 2 fallback, 3 over).</summary>
    private long Position => (_epoch * 4) + _stage;

    public void Start() => StartThread($"dse-functions-partition-{Index}");

    public void Stop()
    {
        StopLoop();
        JoinThread();
    }

    /// <summary>Requests this partition holds that have no outcome yet (after <see cref="Stop"/>).</summary>
    public IEnumerable<TransactionRequest> Unfinished() =>
        _roots.Select(r => r.Request).Concat(_carry.Select(c => c.Request)).Concat(_carriedHere.Select(c => c.Request));

    public override ExecutionSite SiteOf(EntityAddress address) => _engine.PartitionOf(address);

    public override KeySlot SlotFor(Invocation invocation)
    {
        long tid = invocation.Tx.Tid;
        if (invocation.Tx.Mode == RunMode.Optimistic)
        {
            if (!_optimistic.TryGetValue(tid, out TxLocal? local))
            {
                local = new TxLocal(invocation.Tx);
                _optimistic.Add(tid, local);
            }

            return local.Slot(invocation.Target);
        }

        TxLocal fallback = FallbackLocal(invocation.Tx);
        if (fallback.Footprint is null || !fallback.Footprint.Contains(invocation.Target))
        {
            invocation.NoteDiverged();
        }

        return fallback.Slot(invocation.Target);
    }

    public override void OnInvoke(Invocation invocation)
    {
        if (invocation.Tx.Mode == RunMode.Fallback)
        {
            TxLocal local = FallbackLocal(invocation.Tx);
            if (local.Blockers > 0)
            {
                (local.Waiting ??= new Queue<Invocation>()).Enqueue(invocation);
                return;
            }
        }

        invocation.Start(this);
    }

    protected override void Handle(SiteMessage message)
    {
        if (Position < Required(message))
        {
            _deferred.Add(message);
            return;
        }

        message.Handle(this);
    }

    protected override void OnTransactionComplete(TxRun tx)
    {
        if (tx.Mode == RunMode.Optimistic)
        {
            if (--_rootsPending == 0)
            {
                Broadcast(new SyncMessage(SyncKind.Sync1, _epoch, Tids(_roots.Where(r => r.Signals.Failed))));
            }

            return;
        }

        ResolveFallback(tx);
    }

    public void BeginEpoch(EpochRecord record)
    {
        _epoch = record.Epoch;
        _stage = 1;
        _roots.Clear();
        foreach ((TransactionRequest request, long tid) in _carry)
        {
            _roots.Add(new TxRun(request, tid, _epoch, record.Timestamp, record.Seed, RunMode.Optimistic));
        }

        _carry = [];
        for (int i = 0; i < record.Requests.Length; i++)
        {
            TransactionRequest request = record.Requests[i];
            if (ReferenceEquals(SiteOf(request.Target), this))
            {
                _roots.Add(new TxRun(request, record.FirstTid + i, _epoch, record.Timestamp, record.Seed, RunMode.Optimistic));
            }
        }

        _rootsPending = _roots.Count;
        if (_rootsPending == 0)
        {
            Broadcast(new SyncMessage(SyncKind.Sync1, _epoch, []));
        }
        else
        {
            foreach (TxRun root in _roots.ToArray())
            {
                StartRoot(root);
            }
        }

        RunDeferred();
    }

    public void OnSync(SyncMessage sync)
    {
        switch (sync.Kind)
        {
            case SyncKind.Sync1:
                _logicAborts.UnionWith(sync.Tids);
                if (++_sync1 == _engine.PartitionCount)
                {
                    Broadcast(new SyncMessage(SyncKind.Sync2, _epoch, ConcurrencyAborts()));
                }

                break;
            case SyncKind.Sync2:
                _concurrencyAborts.UnionWith(sync.Tids);
                if (++_sync2 == _engine.PartitionCount)
                {
                    CommitAndStartFallback();
                }

                break;
            case SyncKind.Sync3:
                _anyCarried |= sync.Tids.Length > 0;
                if (++_sync3 == _engine.PartitionCount)
                {
                    EndEpoch();
                }

                break;
        }
    }

    public void OnUnlock(long tid, bool commit)
    {
        if (_fallback.TryGetValue(tid, out TxLocal? local))
        {
            local.Unlocked = true;
            local.Commit = commit;
            TryRelease(local);
        }
    }

    // A transaction's fallback is over here once it is unlocked and the lower ones it waited for here are too (a
    // transaction that never came here, or ended elsewhere first, still holds its place in the chains through here).
    private void TryRelease(TxLocal local)
    {
        var ready = new Stack<TxLocal>();
        ready.Push(local);
        while (ready.Count > 0)
        {
            TxLocal next = ready.Pop();
            if (!next.Unlocked || next.Blockers > 0 || next.Released)
            {
                continue;
            }

            next.Released = true;
            if (next.Commit)
            {
                Apply(next);
            }

            foreach (TxLocal dependent in next.Dependents ?? [])
            {
                if (--dependent.Blockers == 0)
                {
                    while (dependent.Waiting is { Count: > 0 } waiting)
                    {
                        waiting.Dequeue().Start(this);
                    }

                    ready.Push(dependent);
                }
            }
        }
    }

    private static long Required(SiteMessage message)
    {
        (long epoch, SiteStage stage) = message.Requires;
        return stage switch
        {
            SiteStage.Any => long.MinValue,
            SiteStage.Executing => (epoch * 4) + 1,
            SiteStage.Fallback => (epoch * 4) + 2,
            _ => (epoch * 4) + 3,
        };
    }

    private void RunDeferred()
    {
        while (true)
        {
            int index = _deferred.FindIndex(m => Position >= Required(m));
            if (index < 0)
            {
                return;
            }

            SiteMessage message = _deferred[index];
            _deferred.RemoveAt(index);
            message.Handle(this);
        }
    }

    // Aria's rule over the transactions' keys owned here, logic aborts left out.
    private long[] ConcurrencyAborts()
    {
        var footprints = new List<(long, IEnumerable<EntityAddress>, IEnumerable<EntityAddress>)>(_optimistic.Count);
        foreach ((long tid, TxLocal local) in _optimistic)
        {
            if (!_logicAborts.Contains(tid))
            {
                footprints.Add((tid, local.Slots.Keys, local.Slots.Values.Where(s => s.Written).Select(s => s.Address)));
            }
        }

        return [.. AriaConflicts.Aborts(footprints)];
    }

    private void CommitAndStartFallback()
    {
        foreach ((long tid, TxLocal local) in _optimistic)
        {
            if (!_logicAborts.Contains(tid) && !_concurrencyAborts.Contains(tid))
            {
                Apply(local);
            }
        }

        var fallbackRoots = new List<TxRun>();
        foreach (TxRun root in _roots)
        {
            if (_logicAborts.Contains(root.Tid))
            {
                _engine.Statistics.CountLogicAbort();
                Complete(root, TransactionPhase.OptimisticLogicAbort, root.Signals.Abort);
            }
            else if (_concurrencyAborts.Contains(root.Tid))
            {
                fallbackRoots.Add(new TxRun(root.Request, root.Tid, _epoch, root.Timestamp, root.Seed, RunMode.Fallback));
            }
            else
            {
                _engine.Statistics.CountLockFree();
                Complete(root, TransactionPhase.LockFree, null);
            }
        }

        PlanFallback();
        _roots.Clear();
        _stage = 2;
        _fallbackPending = fallbackRoots.Count;
        if (_fallbackPending == 0)
        {
            Broadcast(new SyncMessage(SyncKind.Sync3, _epoch, []));
        }
        else
        {
            _roots.AddRange(fallbackRoots);
            foreach (TxRun root in fallbackRoots)
            {
                StartRoot(root);
            }
        }

        RunDeferred();
    }

    // Each aborted transaction waits here for the next lower aborted one on every key it touched here (a chain per
    // key: the lower one waited for its own predecessors, so waiting for the nearest is enough).
    private void PlanFallback()
    {
        var lastOnKey = new Dictionary<EntityAddress, TxLocal>();
        foreach (long tid in _concurrencyAborts.Order())
        {
            if (!_optimistic.TryGetValue(tid, out TxLocal? optimistic))
            {
                continue;
            }

            TxLocal fallback = FallbackLocal(optimistic.Run, tid);
            fallback.Footprint = [.. optimistic.Slots.Keys];
            var waitedFor = new HashSet<TxLocal>();
            foreach (EntityAddress key in fallback.Footprint)
            {
                if (lastOnKey.TryGetValue(key, out TxLocal? lower) && waitedFor.Add(lower))
                {
                    fallback.Blockers++;
                    (lower.Dependents ??= []).Add(fallback);
                }

                lastOnKey[key] = fallback;
            }
        }
    }

    private void ResolveFallback(TxRun tx)
    {
        bool carry = tx.Signals.Diverged;
        bool commit = !carry && !tx.Signals.Failed;
        Broadcast(new UnlockMessage(_epoch, tx.Tid, commit));
        _roots.Remove(tx);
        if (carry)
        {
            _engine.Statistics.CountRescheduled();
            _carriedHere.Add((tx.Request, tx.Tid));
        }
        else
        {
            _engine.Statistics.CountFallback(commit);
            Complete(tx, TransactionPhase.Fallback, tx.Signals.Abort);
        }

        if (--_fallbackPending == 0)
        {
            Broadcast(new SyncMessage(SyncKind.Sync3, _epoch, [.. _carriedHere.Select(c => c.Tid)]));
        }
    }

    private void EndEpoch()
    {
        _carry = [.. _carriedHere];
        _carriedHere.Clear();
        _optimistic.Clear();
        _fallback.Clear();
        _logicAborts.Clear();
        _concurrencyAborts.Clear();
        _roots.Clear();
        _sync1 = _sync2 = _sync3 = 0;
        bool urgent = _anyCarried;
        _anyCarried = false;
        _stage = 3;
        if (Index == 0)
        {
            _engine.Statistics.CountEpoch();
            _engine.Sequencer.RequestEpoch(_epoch + 1, urgent);
        }

        RunDeferred();
    }

    private void Apply(TxLocal local)
    {
        foreach (KeySlot slot in local.Slots.Values)
        {
            if (slot.Written)
            {
                Committed[slot.Address] = slot.Value;
            }
        }
    }

    private void Complete(TxRun tx, TransactionPhase phase, EntityAbort? abort) =>
        tx.Request.Complete(new TransactionOutcome(
            tx.Request.RequestId, tx.Tid, _epoch, phase, abort is null ? tx.RootResult ?? WireFormat.Empty : WireFormat.Empty, abort));

    private TxLocal FallbackLocal(TxRun run, long? tid = null)
    {
        long key = tid ?? run.Tid;
        if (!_fallback.TryGetValue(key, out TxLocal? local))
        {
            local = new TxLocal(run);
            _fallback.Add(key, local);
        }

        return local;
    }

    private void Broadcast(SiteMessage message)
    {
        foreach (Partition partition in _engine.Partitions)
        {
            partition.Post(message);
        }
    }

    private static long[] Tids(IEnumerable<TxRun> runs) => [.. runs.Select(r => r.Tid)];
}
