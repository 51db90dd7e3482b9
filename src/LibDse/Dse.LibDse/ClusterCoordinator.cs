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

    /// <summary>Creates an empty coordinator.</summary>
    /// <param name="logger">Where decisions are logged.</param>
    /// <param name="maxRetainedDecisions">How many recent decisions the cluster state carries (sthreads older than that are treated as rolled back).</param>
    public ClusterCoordinator(ILogger<ClusterCoordinator>? logger = null, int maxRetainedDecisions = 64)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(maxRetainedDecisions);
        _logger = logger ?? NullLogger<ClusterCoordinator>.Instance;
        _maxRetainedDecisions = maxRetainedDecisions;
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

        lock (_lock)
        {
            long id = request.ObjectId;
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
