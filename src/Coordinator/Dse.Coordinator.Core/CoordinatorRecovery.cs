namespace Dse;

/// <summary>
/// A journaled <see cref="ClusterCoordinator"/>'s recovery from its own restart: it rebuilds membership, decisions and
/// acknowledgements from the journal, then waits for every registered participant to answer (a resync or a connect)
/// before the coordinator makes a decision or moves the boundary past the floors participants report. Removals an
/// operator asks for meanwhile are decided when it ends.
/// </summary>
/// <remarks>
/// The state below is guarded by the coordinator's lock; the flows that end recovery run under its mutation lock.
/// Invariant: while recovering, the awaited participants are registered and not removed, and the set is never empty
/// (the answer that empties it ends recovery).
/// </remarks>
internal sealed class CoordinatorRecovery(ClusterCoordinator coordinator, long incarnation)
{
    // The registered, non-removed participants that have not answered yet; null once every one has (or none was
    // registered). Participants an operator removed meanwhile, whose decisions wait for the end.
    private HashSet<long>? _awaiting;
    private readonly List<long> _pendingRemovals = [];

    /// <summary>Whether the coordinator waits for participants to answer. Under the coordinator's lock.</summary>
    public bool IsRecovering => _awaiting is not null;

    /// <summary>How many participants have not answered yet. Under the coordinator's lock.</summary>
    public int AwaitingCount => _awaiting?.Count ?? 0;

    /// <summary>Whether <paramref name="objectId"/> still has to answer. Under the coordinator's lock.</summary>
    public bool Awaits(long objectId) => _awaiting is not null && _awaiting.Contains(objectId);

    /// <summary>
    /// Rebuilds membership, decisions and acknowledgements from the journal of earlier incarnations, and awaits every
    /// registered participant that was not removed.
    /// </summary>
    /// <exception cref="InvalidDataException">The entries contradict each other.</exception>
    public void Replay(IReadOnlyList<ClusterJournalEntry> entries)
    {
        var time = coordinator.Time;
        var members = coordinator.Members;
        var graph = coordinator.Graph;
        var history = coordinator.History;
        lock (coordinator.Sync)
        {
            foreach (var entry in entries)
            {
                switch (entry)
                {
                    case ParticipantRegisteredEntry registered:
                        members.TryRegister(registered.ObjectId, time.GetTimestamp());
                        graph.AddParticipant(registered.ObjectId);
                        break;
                    case RollbackDecidedEntry { Decision: var decision }:
                        if (decision.WorldLine != history.WorldLine + 1 && decision.Reason != RollbackReason.ColdStart)
                        {
                            throw new InvalidDataException($"The coordinator journal holds the decision of world-line {decision.WorldLine} after world-line {history.WorldLine}; decisions must follow each other.");
                        }

                        if (decision.WorldLine <= history.WorldLine)
                        {
                            throw new InvalidDataException($"The coordinator journal holds the decision of world-line {decision.WorldLine} after world-line {history.WorldLine}.");
                        }

                        if (decision.FailedObjectId != RollbackDecision.ColdStart && !members.Contains(decision.FailedObjectId))
                        {
                            throw new InvalidDataException($"The coordinator journal holds a decision about participant {decision.FailedObjectId}, which it never registered.");
                        }

                        history.Record(decision);
                        if (decision.Reason == RollbackReason.Restart)
                        {
                            members[decision.FailedObjectId].Removed = false;
                            graph.Acknowledge(decision.FailedObjectId, decision.WorldLine, decision.CutFor(decision.FailedObjectId));
                        }
                        else if (decision.Reason == RollbackReason.ColdStart)
                        {
                            // A cold start's decision registers every participant it names (one atomic entry).
                            foreach (var (participant, version) in decision.Cut)
                            {
                                members.TryRegister(participant, time.GetTimestamp());
                                graph.AddParticipant(participant);
                                graph.Acknowledge(participant, decision.WorldLine, version);
                            }
                        }
                        else if (decision.Reason == RollbackReason.Removed)
                        {
                            var member = members[decision.FailedObjectId];
                            member.Removed = true;
                            member.RemovedBecause = $"removed at world-line {decision.WorldLine}";
                        }

                        break;
                    case RollbackAcknowledgedEntry ack:
                        if (!members.Contains(ack.ObjectId))
                        {
                            throw new InvalidDataException($"The coordinator journal holds an acknowledgement by participant {ack.ObjectId}, which it never registered.");
                        }

                        graph.Acknowledge(ack.ObjectId, ack.WorldLine, ack.KeptThrough);
                        break;
                }
            }

            var awaiting = members.Active();
            _awaiting = awaiting.Count > 0 ? awaiting : null;
        }
    }

    /// <summary>
    /// A participant's resync: its floors raise the boundary, its durable fragments replace what the coordinator holds
    /// of it, and it counts as answered. Called under the mutation lock, with the request's shape checked.
    /// </summary>
    public async ValueTask<ClusterState> ResyncAsync(ResyncRequest request)
    {
        var members = coordinator.Members;
        var graph = coordinator.Graph;
        var history = coordinator.History;
        long id = request.ObjectId;
        bool endRecovery;
        lock (coordinator.Sync)
        {
            coordinator.ThrowIfFaulted();
            members.Known(id).LastSeen = coordinator.Time.GetTimestamp();
            if (request.WorldLine > history.WorldLine || request.WorldLine < 0)
            {
                throw new DseCoordinatorException(CoordinatorErrorCode.FutureWorldLine, $"Participant {id} resynchronized from world-line {request.WorldLine}, but the coordinator has only decided up to {history.WorldLine}.");
            }

            // A resync from an instance older than the participant's latest restart comes from a superseded
            // instance: its fragments must not replace the newer instance's.
            if (history.FailureOfAfter(id, request.WorldLine) is { } superseding)
            {
                throw new DseCoordinatorException(CoordinatorErrorCode.Removed, $"Participant {id} resynchronized from world-line {request.WorldLine}, but it was {(superseding.Reason == RollbackReason.Removed ? "removed" : "restarted")} at world-line {superseding.WorldLine}: this instance is superseded and must stop.");
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
                if (members.Contains(participant) && committed > graph.CommittedVersion(participant))
                {
                    graph.RaiseCommitted(participant, committed);
                }
            }

            graph.ReplaceUncommitted(id, history.Surviving(id, request.DurableVersions, graph));
            endRecovery = _awaiting is not null && _awaiting.Remove(id) && _awaiting.Count == 0;
            if (_awaiting is null)
            {
                graph.AdvanceCommitted();
            }

            if (!endRecovery)
            {
                coordinator.Publish();
            }

            ClusterCoordinatorLogMessages.Resynced(coordinator.Logger, id, request.DurableVersions.Count, request.WorldLine, AwaitingCount);
        }

        if (endRecovery)
        {
            await EndAsync().ConfigureAwait(false);
        }

        lock (coordinator.Sync)
        {
            return coordinator.PublishedState;
        }
    }

    /// <summary>
    /// A registered participant connects while the coordinator recovers: it restarted, so its storage listing is its
    /// answer. No decision can be made yet; it must connect again once recovery ends, and that connect is its restart.
    /// Called under the mutation lock.
    /// </summary>
    public async ValueTask<ConnectResponse> AnswerWithConnectAsync(ConnectRequest request)
    {
        long id = request.ObjectId;
        bool endRecovery;
        ClusterState answered;
        lock (coordinator.Sync)
        {
            coordinator.Members[id].LastSeen = coordinator.Time.GetTimestamp();
            coordinator.Graph.ReplaceUncommitted(id, coordinator.History.Surviving(id, request.PersistedVersions, coordinator.Graph));
            endRecovery = _awaiting!.Remove(id) && _awaiting.Count == 0;
            if (!endRecovery)
            {
                coordinator.Publish();
            }

            // The caller waits for a state after this one. If its answer ends recovery, the end itself is that change:
            // a state captured after it could be the last one for a while (an idle cluster) and the caller would hang.
            answered = coordinator.PublishedState;
            ClusterCoordinatorLogMessages.AnsweredByConnect(coordinator.Logger, id, request.PersistedVersions.Count, _awaiting.Count);
        }

        if (endRecovery)
        {
            await EndAsync().ConfigureAwait(false);
        }

        return ConnectResponse.Retry(answered);
    }

    /// <summary>
    /// An operator removes <paramref name="member"/> while the coordinator recovers: the removal stands in for its
    /// answer and its decision waits for the end of recovery. Under the coordinator's lock, while recovering.
    /// </summary>
    /// <returns>Whether this was the last answer awaited: the caller ends recovery (<see cref="EndAsync"/>).</returns>
    public bool RemoveWhileRecovering(long objectId, ClusterMember member)
    {
        member.Removed = true;
        member.RemovedBecause = "removed by an operator while the coordinator recovered";
        coordinator.Graph.ReplaceUncommitted(objectId, []);
        _pendingRemovals.Add(objectId);
        return _awaiting!.Remove(objectId) && _awaiting.Count == 0;
    }

    /// <summary>
    /// Every participant answered: decides the removals an operator asked for meanwhile, then lets the boundary move.
    /// Called under the mutation lock.
    /// </summary>
    public async ValueTask EndAsync()
    {
        List<long> removals;
        lock (coordinator.Sync)
        {
            removals = [.. _pendingRemovals];
            _pendingRemovals.Clear();
            _awaiting = null;
        }

        foreach (long id in removals)
        {
            await coordinator.DecideRemovalAsync(id, "removed by an operator while the coordinator recovered").ConfigureAwait(false);
        }

        lock (coordinator.Sync)
        {
            coordinator.Members.TouchAll(coordinator.Time.GetTimestamp());
            coordinator.Graph.AdvanceCommitted();
            coordinator.Publish();
            ClusterCoordinatorLogMessages.RecoveryCompleted(coordinator.Logger, incarnation, coordinator.History.WorldLine);
        }
    }
}
