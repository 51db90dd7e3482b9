namespace Dse;

/// <summary>Recovery from the journal, resynchronization, the cold start, and removal of participants.</summary>
public sealed partial class ClusterCoordinator
{
    // Recovery from the journal, guarded by _lock: the registered, non-removed participants that have not answered yet
    // (null once every one has), and participants an operator removed meanwhile, whose decisions wait for the end.
    private HashSet<long>? _awaiting;
    private readonly List<long> _pendingRemovals = [];

    /// <summary>
    /// Opens a journaled coordinator: replays <paramref name="recovered"/> (membership, decisions, acknowledgements),
    /// journals the start of a new incarnation, and, if any participant was registered, enters recovery: no decision
    /// and no boundary advance until every registered participant has answered with a resync or a connect.
    /// </summary>
    /// <param name="journal">Where cluster changes are made durable.</param>
    /// <param name="recovered">The entries an earlier incarnation journaled, oldest first (empty for a new cluster).</param>
    /// <param name="options">Options; <see cref="ClusterCoordinatorOptions.ExpectedParticipants"/> only applies to an empty journal.</param>
    /// <param name="cancellationToken">Cancels the start.</param>
    /// <exception cref="InvalidDataException">The entries contradict each other (a decision about an unknown participant, world-lines out of order).</exception>
    public static async Task<ClusterCoordinator> OpenAsync(IClusterJournal journal, IReadOnlyList<ClusterJournalEntry> recovered, ClusterCoordinatorOptions? options = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(journal);
        ArgumentNullException.ThrowIfNull(recovered);
        options ??= new ClusterCoordinatorOptions();
        long lastIncarnation = 0;
        bool anyRegistered = false;
        foreach (var entry in recovered)
        {
            if (entry is CoordinatorStartedEntry started)
            {
                lastIncarnation = Math.Max(lastIncarnation, started.Incarnation);
            }

            anyRegistered |= entry is ParticipantRegisteredEntry or RollbackDecidedEntry { Decision.Reason: RollbackReason.ColdStart };
        }

        var coordinator = new ClusterCoordinator(options, journal, lastIncarnation + 1, coldStart: !anyRegistered);
        try
        {
            coordinator.Replay(recovered);
            await coordinator.JournalAsync(new CoordinatorStartedEntry(lastIncarnation + 1), cancellationToken).ConfigureAwait(false);
            lock (coordinator._lock)
            {
                coordinator.Publish();
            }

            ClusterCoordinatorLogMessages.Started(coordinator._logger, lastIncarnation + 1, coordinator._members.Count, coordinator._worldLine, coordinator._awaiting?.Count ?? 0);
            return coordinator;
        }
        catch
        {
            await coordinator.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    private void Replay(IReadOnlyList<ClusterJournalEntry> entries)
    {
        lock (_lock)
        {
            foreach (var entry in entries)
            {
                switch (entry)
                {
                    case ParticipantRegisteredEntry registered:
                        _members.TryAdd(registered.ObjectId, new Member(_time.GetTimestamp()));
                        _graph.AddParticipant(registered.ObjectId);
                        break;
                    case RollbackDecidedEntry { Decision: var decision }:
                        if (decision.WorldLine != _worldLine + 1 && decision.Reason != RollbackReason.ColdStart)
                        {
                            throw new InvalidDataException($"The coordinator journal holds the decision of world-line {decision.WorldLine} after world-line {_worldLine}; decisions must follow each other.");
                        }

                        if (decision.WorldLine <= _worldLine)
                        {
                            throw new InvalidDataException($"The coordinator journal holds the decision of world-line {decision.WorldLine} after world-line {_worldLine}.");
                        }

                        if (decision.FailedObjectId != RollbackDecision.ColdStart && !_members.ContainsKey(decision.FailedObjectId))
                        {
                            throw new InvalidDataException($"The coordinator journal holds a decision about participant {decision.FailedObjectId}, which it never registered.");
                        }

                        _worldLine = decision.WorldLine;
                        _decisions.Add(decision);
                        if (_decisions.Count > _maxRetainedDecisions)
                        {
                            _decisions.RemoveAt(0);
                        }

                        if (decision.Reason == RollbackReason.Restart)
                        {
                            _members[decision.FailedObjectId].Removed = false;
                            _graph.Acknowledge(decision.FailedObjectId, decision.WorldLine, decision.CutFor(decision.FailedObjectId));
                        }
                        else if (decision.Reason == RollbackReason.ColdStart)
                        {
                            // A cold start's decision registers every participant it names (one atomic entry).
                            foreach (var (participant, version) in decision.Cut)
                            {
                                _members.TryAdd(participant, new Member(_time.GetTimestamp()));
                                _graph.AddParticipant(participant);
                                _graph.Acknowledge(participant, decision.WorldLine, version);
                            }
                        }
                        else if (decision.Reason == RollbackReason.Removed)
                        {
                            var member = _members[decision.FailedObjectId];
                            member.Removed = true;
                            member.RemovedBecause = $"removed at world-line {decision.WorldLine}";
                        }

                        break;
                    case RollbackAcknowledgedEntry ack:
                        if (!_members.ContainsKey(ack.ObjectId))
                        {
                            throw new InvalidDataException($"The coordinator journal holds an acknowledgement by participant {ack.ObjectId}, which it never registered.");
                        }

                        _graph.Acknowledge(ack.ObjectId, ack.WorldLine, ack.KeptThrough);
                        break;
                }
            }

            var awaiting = _members.Where(kv => !kv.Value.Removed).Select(kv => kv.Key).ToHashSet();
            _awaiting = awaiting.Count > 0 ? awaiting : null;
        }
    }

    /// <inheritdoc />
    public async ValueTask<ClusterState> ResyncAsync(ResyncRequest request, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(request.CommittedView);
        cancellationToken.ThrowIfCancellationRequested();
        long id = request.ObjectId;
        ValidateAscending(id, request.DurableVersions);
        await _mutate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            bool endRecovery;
            lock (_lock)
            {
                ThrowIfFaulted();
                Known(id).LastSeen = _time.GetTimestamp();
                if (request.WorldLine > _worldLine || request.WorldLine < 0)
                {
                    throw new DseCoordinatorException(CoordinatorErrorCode.FutureWorldLine, $"Participant {id} resynchronized from world-line {request.WorldLine}, but the coordinator has only decided up to {_worldLine}.");
                }

                // A resync from an instance older than the participant's latest restart comes from a superseded
                // instance: its fragments must not replace the newer instance's.
                foreach (var decision in _decisions)
                {
                    if (decision.FailedObjectId == id && decision.WorldLine > request.WorldLine)
                    {
                        throw new DseCoordinatorException(CoordinatorErrorCode.Removed, $"Participant {id} resynchronized from world-line {request.WorldLine}, but it was {(decision.Reason == RollbackReason.Removed ? "removed" : "restarted")} at world-line {decision.WorldLine}: this instance is superseded and must stop.");
                    }
                }

                foreach (var report in request.DurableVersions)
                {
                    if (report.WorldLine > request.WorldLine)
                    {
                        throw new DseCoordinatorException($"Participant {id} resynchronized version {report.Version} from world-line {report.WorldLine}, ahead of its own world-line {request.WorldLine}.");
                    }
                }

                // Every view is a boundary an earlier incarnation published: it never rolls back, so it is a floor.
                foreach (var (participant, committed) in request.CommittedView)
                {
                    if (_members.ContainsKey(participant) && committed > _graph.CommittedVersion(participant))
                    {
                        _graph.RaiseCommitted(participant, committed);
                    }
                }

                _graph.ReplaceUncommitted(id, Surviving(id, request.DurableVersions));
                endRecovery = _awaiting is not null && _awaiting.Remove(id) && _awaiting.Count == 0;
                if (_awaiting is null)
                {
                    _graph.AdvanceCommitted();
                }

                if (!endRecovery)
                {
                    Publish();
                }

                ClusterCoordinatorLogMessages.Resynced(_logger, id, request.DurableVersions.Count, request.WorldLine, _awaiting?.Count ?? 0);
            }

            if (endRecovery)
            {
                await EndRecoveryAsync().ConfigureAwait(false);
            }

            lock (_lock)
            {
                return _state;
            }
        }
        finally
        {
            _mutate.Release();
        }
    }

    /// <summary>
    /// A registered participant connects while the coordinator recovers: it restarted, so its storage listing is its
    /// answer. No decision can be made yet; it must connect again once recovery ends, and that connect is its restart.
    /// Called under _mutate.
    /// </summary>
    private async ValueTask<ConnectResponse> AnswerRecoveryWithConnectAsync(ConnectRequest request)
    {
        long id = request.ObjectId;
        bool endRecovery;
        ClusterState answered;
        lock (_lock)
        {
            _members[id].LastSeen = _time.GetTimestamp();
            _graph.ReplaceUncommitted(id, Surviving(id, request.PersistedVersions));
            endRecovery = _awaiting!.Remove(id) && _awaiting.Count == 0;
            if (!endRecovery)
            {
                Publish();
            }

            // The caller waits for a state after this one. If its answer ends recovery, the end itself is that change:
            // a state captured after it could be the last one for a while (an idle cluster) and the caller would hang.
            answered = _state;
            ClusterCoordinatorLogMessages.AnsweredByConnect(_logger, id, request.PersistedVersions.Count, _awaiting.Count);
        }

        if (endRecovery)
        {
            await EndRecoveryAsync().ConfigureAwait(false);
        }

        return ConnectResponse.Retry(answered);
    }

    /// <summary>
    /// Every participant answered: decides the removals an operator asked for meanwhile, then lets the boundary move.
    /// Called under _mutate.
    /// </summary>
    private async ValueTask EndRecoveryAsync()
    {
        List<long> removals;
        lock (_lock)
        {
            removals = [.. _pendingRemovals];
            _pendingRemovals.Clear();
            _awaiting = null;
        }

        foreach (long id in removals)
        {
            await DecideRemovalAsync(id, "removed by an operator while the coordinator recovered").ConfigureAwait(false);
        }

        lock (_lock)
        {
            long now = _time.GetTimestamp();
            foreach (var member in _members.Values)
            {
                member.LastSeen = now;
            }

            _graph.AdvanceCommitted();
            Publish();
            ClusterCoordinatorLogMessages.RecoveryCompleted(_logger, _incarnation, _worldLine);
        }
    }

    /// <summary>
    /// Removes a participant from the cluster: its unreported state counts as lost, so a decision rolls back whatever
    /// depends on it, and its requests are refused until it connects again (which is a restart like any other). While
    /// the coordinator recovers, this also stands in for the participant's answer; the caller accepts the risk that
    /// the removed participant exposed state the others' reports cannot reconstruct (docs/coordinator.md).
    /// </summary>
    /// <returns>False if the participant was already removed.</returns>
    /// <exception cref="DseCoordinatorException">The participant is unknown.</exception>
    public async Task<bool> RemoveParticipantAsync(long objectId, CancellationToken cancellationToken = default)
    {
        await _mutate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            bool endRecovery = false;
            lock (_lock)
            {
                ThrowIfFaulted();
                var member = Known(objectId, allowRemoved: true);
                if (member.Removed)
                {
                    return false;
                }

                if (_awaiting is not null)
                {
                    member.Removed = true;
                    member.RemovedBecause = "removed by an operator while the coordinator recovered";
                    _graph.ReplaceUncommitted(objectId, []);
                    _pendingRemovals.Add(objectId);
                    endRecovery = _awaiting.Remove(objectId) && _awaiting.Count == 0;
                }
            }

            if (endRecovery)
            {
                await EndRecoveryAsync().ConfigureAwait(false);
            }
            else if (!Recovering())
            {
                await DecideRemovalAsync(objectId, "removed by an operator").ConfigureAwait(false);
            }

            return true;
        }
        finally
        {
            _mutate.Release();
        }
    }

    /// <summary>
    /// Removes every participant not heard from within <see cref="ClusterCoordinatorOptions.HeartbeatTimeout"/> (none
    /// while recovering). The heartbeat timer calls this; tests on a fake clock call it directly.
    /// </summary>
    /// <returns>The removed participants.</returns>
    public async Task<IReadOnlyList<long>> RemoveSilentParticipantsAsync(CancellationToken cancellationToken = default)
    {
        if (_heartbeatTimeout is not { } timeout)
        {
            return [];
        }

        await _mutate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            List<long> silent;
            lock (_lock)
            {
                if (_fault is not null || _awaiting is not null || (_coldStartMissing is not null && !_coldStartDone))
                {
                    return [];
                }

                silent = [.. _members.Where(kv => !kv.Value.Removed && _time.GetElapsedTime(kv.Value.LastSeen) > timeout).Select(kv => kv.Key).Order()];
            }

            foreach (long id in silent)
            {
                await DecideRemovalAsync(id, $"no heartbeat within {timeout.TotalSeconds:0.###} s").ConfigureAwait(false);
            }

            return silent;
        }
        finally
        {
            _mutate.Release();
        }
    }

    /// <summary>
    /// The removal decision: the cap is what the participant reported, so dependents of anything it did not report roll
    /// back and the boundary can move again. Journaled before anyone sees it. Called under _mutate, outside recovery.
    /// </summary>
    private async ValueTask DecideRemovalAsync(long id, string because)
    {
        RollbackDecision decision;
        lock (_lock)
        {
            ThrowIfFaulted();
            decision = new RollbackDecision(_worldLine + 1, id, _graph.ComputeClosure(), RollbackReason.Removed);
            _blocked = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        await JournalAsync(new RollbackDecidedEntry(decision)).ConfigureAwait(false);
        lock (_lock)
        {
            var member = _members[id];
            member.Removed = true;
            member.RemovedBecause = $"{because}; removed at world-line {decision.WorldLine}";
            CommitDecision(decision);
            ClusterCoordinatorLogMessages.ParticipantRemoved(_logger, id, because, decision.WorldLine, decision);
        }
    }

    private bool Recovering()
    {
        lock (_lock)
        {
            return _awaiting is not null;
        }
    }

    private void OnHeartbeatTimer() => _ = SweepAsync();

    private async Task SweepAsync()
    {
        try
        {
            await RemoveSilentParticipantsAsync().ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            ClusterCoordinatorLogMessages.SweepFailed(_logger, ex);
        }
    }

    /// <summary>Records a cold-start participant's listing. Under _lock.</summary>
    private Task<ConnectResponse> JoinColdStart(ConnectRequest request)
    {
        long id = request.ObjectId;
        if (!_coldStartExpected!.Contains(id))
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.NotExpected, $"Participant {id} is not among the expected participants of this cold start ({string.Join(", ", _coldStartExpected.Order())}).");
        }

        if (_coldStartJoined.TryGetValue(id, out var earlier))
        {
            // The same id again (a retry, or a new instance): its latest listing is the one that counts.
            earlier.Waiter.TrySetException(new DseCoordinatorException($"Participant {id} connected again during the cold start; this earlier connect is superseded."));
        }

        var waiter = new TaskCompletionSource<ConnectResponse>(TaskCreationOptions.RunContinuationsAsynchronously);
        _coldStartJoined[id] = (request, waiter);
        _coldStartMissing!.Remove(id);
        return waiter.Task;
    }

    private bool ColdStartReady()
    {
        lock (_lock)
        {
            return !_coldStartDone && _coldStartMissing!.Count == 0;
        }
    }

    /// <summary>
    /// Everyone's storage is known: restores each participant to the greatest closure over all listings, checking
    /// world-line labels so that a version number a restarted participant reused never passes for the state observed.
    /// The result is recorded as a decision at a world-line above every label seen, so later connects filter
    /// against it and headers from before the restart count as a lower world-line. Registrations and the decision are
    /// journaled before anyone is answered. Called under _mutate.
    /// </summary>
    private async ValueTask FinishColdStartAsync(CancellationToken cancellationToken)
    {
        RollbackDecision? decision = null;
        Dictionary<long, long> cut;
        long[] ids;
        lock (_lock)
        {
            long maxLabel = 0;
            bool anyListed = false;
            ids = [.. _coldStartJoined.Keys.Order()];
            foreach (var (id, (request, _)) in _coldStartJoined)
            {
                _graph.AddParticipant(id);
                foreach (var r in request.PersistedVersions)
                {
                    _graph.Add(id, r);
                    maxLabel = Math.Max(maxLabel, r.WorldLine);
                    anyListed = true;
                }
            }

            cut = _graph.ComputeClosure(checkLineage: true);
            if (anyListed)
            {
                decision = new RollbackDecision(maxLabel + 1, RollbackDecision.ColdStart, cut);
            }
        }

        try
        {
            if (decision is not null)
            {
                // One entry, which also registers every participant its cut names: a crash can never leave half a cold
                // start in the journal (registrations without the decision would make the next start skip the closure).
                await JournalAsync(new RollbackDecidedEntry(decision), cancellationToken).ConfigureAwait(false);
            }
            else
            {
                // Nothing was stored anywhere: registrations one by one are safe even if only some become durable.
                foreach (long id in ids)
                {
                    await JournalAsync(new ParticipantRegisteredEntry(id), cancellationToken).ConfigureAwait(false);
                }
            }
        }
        catch (Exception ex)
        {
            lock (_lock)
            {
                foreach (var (_, (_, waiter)) in _coldStartJoined)
                {
                    waiter.TrySetException(ex);
                }
            }

            throw;
        }

        lock (_lock)
        {
            long now = _time.GetTimestamp();
            foreach (long id in ids)
            {
                _members[id] = new Member(now);
            }

            if (decision is not null)
            {
                _worldLine = decision.WorldLine;
                _decisions.Add(decision);
                _graph.Apply(decision);
                foreach (long id in ids)
                {
                    _graph.Acknowledge(id, decision.WorldLine, cut[id]);
                }
            }

            _graph.AdvanceCommitted();
            _coldStartDone = true;
            Publish();
            foreach (var (id, (_, waiter)) in _coldStartJoined)
            {
                ClusterCoordinatorLogMessages.Registered(_logger, id, cut[id], _worldLine);
                waiter.TrySetResult(new ConnectResponse(_worldLine, cut[id], false, _state));
            }

            _coldStartJoined.Clear();
        }
    }

    private async ValueTask<ConnectResponse> AwaitColdStartAsync(long id, Task<ConnectResponse> coldStart, CancellationToken cancellationToken)
    {
        try
        {
            return await coldStart.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            lock (_lock)
            {
                // Undo the join if the cold start has not used it yet; once it has, the recorded decision covers it.
                if (!_coldStartDone && _coldStartMissing!.Count > 0 && _coldStartJoined.TryGetValue(id, out var joined) && joined.Waiter.Task == coldStart)
                {
                    _coldStartJoined.Remove(id);
                    _coldStartMissing!.Add(id);
                }
            }

            throw;
        }
    }
}
