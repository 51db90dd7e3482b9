using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse;

/// <summary>
/// The coordinator's state machine: the graph view, the boundary closure and rollback decisions. Today it runs in the
/// participants' process (embedded use, tests, the simulation) and keeps decisions in memory only, so it does not
/// survive its process; the durable, out-of-process coordinator (docs/coordinator.md) builds on it behind the same
/// <see cref="IDseCoordinator"/>.
/// </summary>
public sealed class ClusterCoordinator : IDseCoordinator
{
    private readonly Lock _lock = new();
    private readonly ILogger _logger;
    private readonly int _maxRetainedDecisions;

    // All fields below are guarded by _lock. _state is the published snapshot; _changed completes when it is replaced.
    private readonly DependencyGraph _graph = new();
    private readonly List<RollbackDecision> _decisions = [];
    private long _worldLine;
    private long _epoch;
    private ClusterState _state = ClusterState.Empty;
    private TaskCompletionSource<ClusterState> _changed = NewSignal();

    // Cold start (ExpectedParticipants set), guarded by _lock: the expected ids, who has not connected yet, and the
    // listings and waiting connects of those who have. Nothing enters the graph until the last one arrives.
    private readonly HashSet<long>? _coldStartExpected;
    private readonly HashSet<long>? _coldStartMissing;
    private readonly Dictionary<long, (ConnectRequest Request, TaskCompletionSource<ConnectResponse> Waiter)> _coldStartJoined = [];
    private bool _coldStartDone;

    /// <summary>Creates an empty coordinator.</summary>
    /// <exception cref="ArgumentException">The options are invalid; the message names the option.</exception>
    public ClusterCoordinator(ClusterCoordinatorOptions? options = null)
    {
        options ??= new ClusterCoordinatorOptions();
        options.Validate();
        _logger = (ILogger?)options.LoggerFactory?.CreateLogger<ClusterCoordinator>() ?? NullLogger<ClusterCoordinator>.Instance;
        _maxRetainedDecisions = options.MaxRetainedDecisions;
        if (options.ExpectedParticipants is { } expected)
        {
            _coldStartExpected = [.. expected];
            _coldStartMissing = [.. expected];
        }
    }

    /// <summary>Number of rollback decisions made so far.</summary>
    public long WorldLine
    {
        get
        {
            lock (_lock)
            {
                return _worldLine;
            }
        }
    }

    /// <summary>The current published state, without waiting.</summary>
    public ClusterState State
    {
        get
        {
            lock (_lock)
            {
                return _state;
            }
        }
    }

    /// <inheritdoc />
    public ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(request);
        cancellationToken.ThrowIfCancellationRequested();
        ValidateAscending(request);

        // A cold start is only ever entered, never re-entered: once it completed it is over for good.
        lock (_lock)
        {
            if (_coldStartMissing is not null && !_coldStartDone)
            {
                return AwaitColdStartAsync(request.ObjectId, JoinColdStart(request), cancellationToken);
            }
        }

        lock (_lock)
        {
            long id = request.ObjectId;
            if (_coldStartExpected is not null && !_graph.Contains(id) && request.PersistedVersions.Count > 0)
            {
                // Storage from before the restart that the cold start never saw cannot be checked against its cut.
                throw new DseCoordinatorException($"Participant {id} brings stored versions but was not among the expected participants of the cold start ({string.Join(", ", _coldStartExpected.Order())}); add it to ExpectedParticipants or start it on empty storage.");
            }

            if (!_graph.Contains(id))
            {
                _graph.AddParticipant(id);
                long restore = 0;
                foreach (var r in request.PersistedVersions)
                {
                    if (!_graph.IsStale(id, r.Version, r.WorldLine, _decisions))
                    {
                        _graph.Add(id, r);
                        restore = r.Version;
                    }
                }

                _graph.AdvanceCommitted();
                Publish();
                CoordinatorLog.Registered(_logger, id, restore, _worldLine);
                return ValueTask.FromResult(new ConnectResponse(_worldLine, restore, false, _state));
            }

            // A known id connecting again restarted: what it lost is everything its storage no longer holds.
            long committed = _graph.CommittedVersion(id);
            var surviving = new List<VersionReport>();
            long cap = committed;
            foreach (var r in request.PersistedVersions)
            {
                if (r.Version > committed && !_graph.IsStale(id, r.Version, r.WorldLine, _decisions))
                {
                    surviving.Add(r);
                    cap = r.Version;
                }
            }

            _graph.ReplaceUncommitted(id, surviving);
            var cut = _graph.ComputeClosure(new Dictionary<long, long> { [id] = cap });
            var decision = new RollbackDecision(_worldLine + 1, id, cut);

            // The decision is final before anyone sees it: the world-line moves, then the view and the state follow.
            _worldLine = decision.WorldLine;
            _decisions.Add(decision);
            if (_decisions.Count > _maxRetainedDecisions)
            {
                _decisions.RemoveAt(0);
            }

            _graph.Apply(decision);
            _graph.Acknowledge(id, decision.WorldLine, cut[id]);
            _graph.AdvanceCommitted();
            Publish();
            CoordinatorLog.RollbackDecided(_logger, id, decision.WorldLine, cut[id], decision);
            return ValueTask.FromResult(new ConnectResponse(_worldLine, cut[id], true, _state));
        }
    }

    /// <summary>Records a cold-start participant's listing; the last one to arrive computes everyone's restore point.</summary>
    private Task<ConnectResponse> JoinColdStart(ConnectRequest request)
    {
        long id = request.ObjectId;
        if (!_coldStartExpected!.Contains(id))
        {
            throw new DseCoordinatorException($"Participant {id} is not among the expected participants of this cold start ({string.Join(", ", _coldStartExpected.Order())}).");
        }

        if (_coldStartJoined.TryGetValue(id, out var earlier))
        {
            // The same id again (a retry, or a new instance): its latest listing is the one that counts.
            earlier.Waiter.TrySetException(new DseCoordinatorException($"Participant {id} connected again during the cold start; this earlier connect is superseded."));
        }

        var waiter = new TaskCompletionSource<ConnectResponse>(TaskCreationOptions.RunContinuationsAsynchronously);
        _coldStartJoined[id] = (request, waiter);
        _coldStartMissing!.Remove(id);
        if (_coldStartMissing.Count == 0)
        {
            CompleteColdStart();
        }

        return waiter.Task;
    }

    /// <summary>
    /// Everyone's storage is known: restores each participant to the greatest closure over all listings, checking
    /// world-line labels so that a version number a restarted participant reused never passes for the state observed.
    /// The result is recorded as a decision at a world-line above every label seen, so later connects filter
    /// against it and headers from before the restart count as a lower world-line.
    /// </summary>
    private void CompleteColdStart()
    {
        long maxLabel = 0;
        bool anyListed = false;
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

        var cut = _graph.ComputeClosure(checkLineage: true);
        if (anyListed)
        {
            var decision = new RollbackDecision(maxLabel + 1, RollbackDecision.ColdStart, cut);
            _worldLine = decision.WorldLine;
            _decisions.Add(decision);
            _graph.Apply(decision);
            foreach (var id in _coldStartJoined.Keys)
            {
                _graph.Acknowledge(id, decision.WorldLine, cut[id]);
            }
        }

        _graph.AdvanceCommitted();
        _coldStartDone = true;
        Publish();
        foreach (var (id, (_, waiter)) in _coldStartJoined)
        {
            CoordinatorLog.Registered(_logger, id, cut[id], _worldLine);
            waiter.TrySetResult(new ConnectResponse(_worldLine, cut[id], false, _state));
        }

        _coldStartJoined.Clear();
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
                if (!_coldStartDone && _coldStartJoined.TryGetValue(id, out var joined) && joined.Waiter.Task == coldStart)
                {
                    _coldStartJoined.Remove(id);
                    _coldStartMissing!.Add(id);
                }
            }

            throw;
        }
    }

    /// <inheritdoc />
    public ValueTask<ReportOutcome> ReportPersistedAsync(long objectId, VersionReport report, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(report);
        cancellationToken.ThrowIfCancellationRequested();
        if (report.Version <= 0)
        {
            throw new DseCoordinatorException($"Participant {objectId} reported version {report.Version}; versions start at 1.");
        }

        lock (_lock)
        {
            if (!_graph.Contains(objectId))
            {
                throw new DseCoordinatorException($"Participant {objectId} is not registered; connect before reporting.");
            }

            if (report.WorldLine > _worldLine)
            {
                throw new DseCoordinatorException($"Participant {objectId} reported version {report.Version} from world-line {report.WorldLine}, ahead of the coordinator's {_worldLine}.");
            }

            // A report older than the retained decisions cannot be checked against them: refuse it as stale.
            bool beyondRetention = _decisions.Count > 0 && report.WorldLine < _decisions[0].WorldLine - 1;
            if (beyondRetention || _graph.IsStale(objectId, report.Version, report.WorldLine, _decisions))
            {
                return ValueTask.FromResult(ReportOutcome.Stale);
            }

            var outcome = _graph.Add(objectId, report);
            if (outcome == ReportOutcome.Accepted && _graph.AdvanceCommitted())
            {
                Publish();
            }

            return ValueTask.FromResult(outcome);
        }
    }

    /// <inheritdoc />
    public ValueTask AcknowledgeRollbackAsync(long objectId, long worldLine, long keptThrough, CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        lock (_lock)
        {
            if (worldLine > _worldLine)
            {
                throw new DseCoordinatorException($"Participant {objectId} acknowledged world-line {worldLine}, which the coordinator has not decided.");
            }

            _graph.Acknowledge(objectId, worldLine, keptThrough);
        }

        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    public ValueTask<ClusterState> GetStateAsync(CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        return ValueTask.FromResult(State);
    }

    /// <inheritdoc />
    public async ValueTask<ClusterState> WaitForChangeAsync(long knownEpoch, CancellationToken cancellationToken = default)
    {
        Task<ClusterState> next;
        lock (_lock)
        {
            if (_state.Epoch > knownEpoch)
            {
                return _state;
            }

            next = _changed.Task;
        }

        return await next.WaitAsync(cancellationToken).ConfigureAwait(false);
    }

    private static TaskCompletionSource<ClusterState> NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    private static void ValidateAscending(ConnectRequest request)
    {
        long previous = 0;
        foreach (var r in request.PersistedVersions)
        {
            if (r.Version <= previous)
            {
                throw new DseCoordinatorException($"Participant {request.ObjectId} listed version {r.Version} after {previous}; persisted versions must be positive and ascending.");
            }

            previous = r.Version;
        }
    }

    private void Publish()
    {
        _epoch++;
        _state = new ClusterState(_epoch, _worldLine, _decisions.ToArray(), _graph.CommittedSnapshot());
        var signal = _changed;
        _changed = NewSignal();
        signal.TrySetResult(_state);
    }
}
