namespace Dse;

/// <summary>
/// A whole-cluster cold start (<see cref="ClusterCoordinatorOptions.ExpectedParticipants"/> on an empty journal): the
/// first connects wait until every expected participant has connected and listed its storage; then each restores the
/// greatest closure over all listings, journaled as one decision before anyone is answered.
/// </summary>
/// <remarks>
/// The state below is guarded by the coordinator's lock. Nothing enters the graph until the last expected participant
/// arrives. A cold start is entered once and never again: once <see cref="IsDone"/>, connects take the ordinary paths.
/// </remarks>
internal sealed class ColdStart(ClusterCoordinator coordinator, IReadOnlyCollection<long> expected)
{
    private readonly HashSet<long> _expected = [.. expected];

    // Who has not connected yet, and the listings and waiting connects of those who have.
    private readonly HashSet<long> _missing = [.. expected];
    private readonly Dictionary<long, (ConnectRequest Request, TaskCompletionSource<ConnectResponse> Waiter)> _joined = [];

    /// <summary>Whether the cold start completed. Under the coordinator's lock.</summary>
    public bool IsDone { get; private set; }

    /// <summary>The expected participants, in id order, for messages.</summary>
    public string ExpectedList => string.Join(", ", _expected.Order());

    /// <summary>Records a participant's listing; the task completes when the cold start does. Under the coordinator's lock.</summary>
    /// <exception cref="DseCoordinatorException"><see cref="CoordinatorErrorCode.NotExpected"/>: the id is not expected.</exception>
    public Task<ConnectResponse> Join(ConnectRequest request)
    {
        long id = request.ObjectId;
        if (!_expected.Contains(id))
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.NotExpected, $"Participant {id} is not among the expected participants of this cold start ({ExpectedList}).");
        }

        if (_joined.TryGetValue(id, out var earlier))
        {
            // The same id again (a retry, or a new instance): its latest listing is the one that counts.
            earlier.Waiter.TrySetException(new DseCoordinatorException($"Participant {id} connected again during the cold start; this earlier connect is superseded."));
        }

        var waiter = new TaskCompletionSource<ConnectResponse>(TaskCreationOptions.RunContinuationsAsynchronously);
        _joined[id] = (request, waiter);
        _missing.Remove(id);
        return waiter.Task;
    }

    /// <summary>Whether every expected participant has joined and the cold start has not completed yet.</summary>
    public bool IsReady()
    {
        lock (coordinator.Sync)
        {
            return !IsDone && _missing.Count == 0;
        }
    }

    /// <summary>
    /// Everyone's storage is known: restores each participant to the greatest closure over all listings, checking
    /// world-line labels so that a version number a restarted participant reused never passes for the state observed.
    /// The result is recorded as a decision at a world-line above every label seen, so later connects filter
    /// against it and headers from before the restart count as a lower world-line. Registrations and the decision are
    /// journaled before anyone is answered. Called under the coordinator's mutation lock.
    /// </summary>
    public async ValueTask FinishAsync(CancellationToken cancellationToken)
    {
        var graph = coordinator.Graph;
        RollbackDecision? decision = null;
        Dictionary<long, long> cut;
        long[] ids;
        lock (coordinator.Sync)
        {
            long maxLabel = 0;
            bool anyListed = false;
            ids = [.. _joined.Keys.Order()];
            foreach (var (id, (request, _)) in _joined)
            {
                graph.AddParticipant(id);
                foreach (var r in request.PersistedVersions)
                {
                    graph.Add(id, r);
                    maxLabel = Math.Max(maxLabel, r.WorldLine);
                    anyListed = true;
                }
            }

            cut = graph.ComputeClosure(checkLineage: true);
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
                await coordinator.JournalAsync(new RollbackDecidedEntry(decision), cancellationToken).ConfigureAwait(false);
            }
            else
            {
                // Nothing was stored anywhere: registrations one by one are safe even if only some become durable.
                foreach (long id in ids)
                {
                    await coordinator.JournalAsync(new ParticipantRegisteredEntry(id), cancellationToken).ConfigureAwait(false);
                }
            }
        }
        catch (Exception ex)
        {
            lock (coordinator.Sync)
            {
                foreach (var (_, (_, waiter)) in _joined)
                {
                    waiter.TrySetException(ex);
                }
            }

            throw;
        }

        lock (coordinator.Sync)
        {
            long now = coordinator.Time.GetTimestamp();
            foreach (long id in ids)
            {
                coordinator.Members.Register(id, now);
            }

            if (decision is not null)
            {
                coordinator.History.Record(decision);
                graph.Apply(decision);
                foreach (long id in ids)
                {
                    graph.Acknowledge(id, decision.WorldLine, cut[id]);
                }
            }

            graph.AdvanceCommitted();
            IsDone = true;
            coordinator.Publish();
            long worldLine = coordinator.History.WorldLine;
            foreach (var (id, (_, waiter)) in _joined)
            {
                ClusterCoordinatorLogMessages.Registered(coordinator.Logger, id, cut[id], worldLine);
                waiter.TrySetResult(new ConnectResponse(worldLine, cut[id], false, coordinator.PublishedState));
            }

            _joined.Clear();
        }
    }

    /// <summary>Waits for the cold start a connect joined; a cancelled wait takes its listing back if it is still unused.</summary>
    public async ValueTask<ConnectResponse> AwaitAsync(long id, Task<ConnectResponse> joined, CancellationToken cancellationToken)
    {
        try
        {
            return await joined.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            lock (coordinator.Sync)
            {
                // Undo the join if the cold start has not used it yet; once it has, the recorded decision covers it.
                if (!IsDone && _missing.Count > 0 && _joined.TryGetValue(id, out var entry) && entry.Waiter.Task == joined)
                {
                    _joined.Remove(id);
                    _missing.Add(id);
                }
            }

            throw;
        }
    }
}
