using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse;

/// <summary>
/// The coordinator's state machine: membership, the graph view, the boundary closure and rollback decisions. One
/// implementation serves every use: embedded in the participants' process (no journal; it does not survive its
/// process), behind the gRPC coordinator service with a durable journal (<see cref="OpenAsync"/>), and in the
/// seeded simulation. See docs/coordinator.md.
/// </summary>
/// <remarks>
/// <para>On the failure-free path (reports, heartbeats, boundary queries) nothing is written to the journal. Cluster
/// changes (a registration, a rollback decision, an acknowledgement of one) are journaled and durable before anyone
/// sees them; while a decision is being journaled, reports wait so that the boundary cannot pass its cut.</para>
/// <para>A journaled coordinator that restarts recovers membership and decisions from its journal and then waits for
/// every registered participant to answer (<see cref="IDseCoordinator.ResyncAsync"/> or a connect) before it makes a
/// decision or moves the boundary past the floors the participants report.</para>
/// </remarks>
public sealed partial class ClusterCoordinator : IDseCoordinator, IAsyncDisposable
{
    private readonly Lock _lock = new();
    private readonly ILogger _logger;
    private readonly int _maxRetainedDecisions;
    private readonly IClusterJournal? _journal;
    private readonly TimeProvider _time;
    private readonly TimeSpan? _heartbeatTimeout;
    private readonly ITimer? _heartbeatTimer;

    // Serializes the journaled mutations (registrations, decisions, resyncs, the end of recovery). Taken before _lock,
    // never while holding it.
    private readonly SemaphoreSlim _mutate = new(1, 1);

    // All fields below are guarded by _lock. _state is the published snapshot; _changed completes when it is replaced.
    private readonly DependencyGraph _graph = new();
    private readonly List<RollbackDecision> _decisions = [];
    private readonly Dictionary<long, Member> _members = [];
    private long _worldLine;
    private long _epoch;
    private readonly long _incarnation;
    private ClusterState _state = ClusterState.Empty;
    private TaskCompletionSource<ClusterState> _changed = NewSignal();

    // Set while a decision is computed but not yet durable: reports wait for it, so the boundary cannot pass its cut.
    private TaskCompletionSource? _blocked;

    // Set once the journal failed: the outcome of the last append is unknown, so the coordinator stops serving.
    private Exception? _fault;
    private readonly TaskCompletionSource _faulted = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Cold start (ExpectedParticipants set), guarded by _lock: the expected ids, who has not connected yet, and the
    // listings and waiting connects of those who have. Nothing enters the graph until the last one arrives.
    private readonly HashSet<long>? _coldStartExpected;
    private readonly HashSet<long>? _coldStartMissing;
    private readonly Dictionary<long, (ConnectRequest Request, TaskCompletionSource<ConnectResponse> Waiter)> _coldStartJoined = [];
    private bool _coldStartDone;

    /// <summary>Creates an empty coordinator without a journal: it does not survive its process.</summary>
    /// <exception cref="ArgumentException">The options are invalid; the message names the option.</exception>
    public ClusterCoordinator(ClusterCoordinatorOptions? options = null)
        : this(options ?? new ClusterCoordinatorOptions(), journal: null, incarnation: 1, coldStart: true)
    {
        lock (_lock)
        {
            Publish();
        }
    }

    private ClusterCoordinator(ClusterCoordinatorOptions options, IClusterJournal? journal, long incarnation, bool coldStart)
    {
        options.Validate();
        _logger = (ILogger?)options.LoggerFactory?.CreateLogger<ClusterCoordinator>() ?? NullLogger<ClusterCoordinator>.Instance;
        _maxRetainedDecisions = options.MaxRetainedDecisions;
        _journal = journal;
        _time = options.TimeProvider;
        _heartbeatTimeout = options.HeartbeatTimeout;
        _incarnation = incarnation;
        _epoch = incarnation << 32;
        if (coldStart && options.ExpectedParticipants is { } expected)
        {
            _coldStartExpected = [.. expected];
            _coldStartMissing = [.. expected];
        }

        if (_heartbeatTimeout is { } timeout)
        {
            var period = timeout / 4;
            _heartbeatTimer = _time.CreateTimer(static s => ((ClusterCoordinator)s!).OnHeartbeatTimer(), this, period, period);
        }
    }

    /// <summary>Number of rollback decisions made so far (the current world-line).</summary>
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

    /// <summary>The coordinator incarnation: 1 for a fresh one, one more with every recovery from the journal.</summary>
    public long Incarnation
    {
        get
        {
            lock (_lock)
            {
                return _incarnation;
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

    /// <summary>The error that stopped the coordinator (its journal failed), if any; it then refuses every request.</summary>
    public Exception? Fault
    {
        get
        {
            lock (_lock)
            {
                return _fault;
            }
        }
    }

    /// <summary>Completes when the coordinator stops serving (<see cref="Fault"/> is set); a host restarts it then.</summary>
    public Task Faulted => _faulted.Task;

    /// <inheritdoc />
    public async ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(request);
        cancellationToken.ThrowIfCancellationRequested();
        ValidateAscending(request.ObjectId, request.PersistedVersions);

        Task<ConnectResponse>? coldStart = null;
        await _mutate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ConnectKind kind;
            lock (_lock)
            {
                ThrowIfFaulted();

                // A cold start is only ever entered, never re-entered: once it completed it is over for good.
                if (_coldStartMissing is not null && !_coldStartDone)
                {
                    kind = ConnectKind.ColdStart;
                    coldStart = JoinColdStart(request);
                }
                else if (!_members.ContainsKey(request.ObjectId))
                {
                    kind = ConnectKind.New;
                    if (_coldStartExpected is not null && request.PersistedVersions.Count > 0)
                    {
                        // Storage from before the restart that the cold start never saw cannot be checked against its cut.
                        throw new DseCoordinatorException(CoordinatorErrorCode.NotExpected, $"Participant {request.ObjectId} brings stored versions but was not among the expected participants of the cold start ({string.Join(", ", _coldStartExpected.Order())}); add it to ExpectedParticipants or start it on empty storage.");
                    }
                }
                else
                {
                    kind = _awaiting is not null ? ConnectKind.RecoveryAnswer : ConnectKind.Restart;
                }
            }

            switch (kind)
            {
                case ConnectKind.ColdStart:
                    if (ColdStartReady())
                    {
                        // Everyone's cold start, not only this caller's: its cancellation must not abandon it halfway.
                        await FinishColdStartAsync(CancellationToken.None).ConfigureAwait(false);
                    }

                    break;
                case ConnectKind.New:
                    return await RegisterAsync(request).ConfigureAwait(false);
                case ConnectKind.RecoveryAnswer:
                    return await AnswerRecoveryWithConnectAsync(request).ConfigureAwait(false);
                default:
                    return await RestartAsync(request).ConfigureAwait(false);
            }
        }
        finally
        {
            _mutate.Release();
        }

        // Outside the mutation lock: the other cold-start participants must be able to join meanwhile.
        return await AwaitColdStartAsync(request.ObjectId, coldStart!, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>A new id joins: journaled first, then its stored versions enter the graph.</summary>
    private async ValueTask<ConnectResponse> RegisterAsync(ConnectRequest request)
    {
        long id = request.ObjectId;
        await JournalAsync(new ParticipantRegisteredEntry(id)).ConfigureAwait(false);
        lock (_lock)
        {
            _members[id] = new Member(_time.GetTimestamp());
            _graph.AddParticipant(id);
            var surviving = Surviving(id, request.PersistedVersions);
            foreach (var r in surviving)
            {
                _graph.Add(id, r);
            }

            long restore = surviving.Count > 0 ? surviving[^1].Version : 0;
            if (_awaiting is null)
            {
                _graph.AdvanceCommitted();
            }

            Publish();
            ClusterCoordinatorLogMessages.Registered(_logger, id, restore, _worldLine);
            return new ConnectResponse(_worldLine, restore, false, _state);
        }
    }

    /// <summary>
    /// A known id connecting again restarted: what it lost is everything its storage no longer holds. The decision is
    /// durable before anyone sees it; reports wait meanwhile.
    /// </summary>
    private async ValueTask<ConnectResponse> RestartAsync(ConnectRequest request)
    {
        long id = request.ObjectId;
        RollbackDecision decision;
        lock (_lock)
        {
            var surviving = Surviving(id, request.PersistedVersions);
            long cap = surviving.Count > 0 ? surviving[^1].Version : _graph.CommittedVersion(id);
            _graph.ReplaceUncommitted(id, surviving);
            var cut = _graph.ComputeClosure(new Dictionary<long, long> { [id] = cap });
            decision = new RollbackDecision(_worldLine + 1, id, cut, RollbackReason.Restart);
            _blocked = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        await JournalAsync(new RollbackDecidedEntry(decision)).ConfigureAwait(false);
        lock (_lock)
        {
            var member = _members[id];
            bool wasRemoved = member.Removed;
            member.Removed = false;
            member.LastSeen = _time.GetTimestamp();
            CommitDecision(decision);
            if (wasRemoved)
            {
                ClusterCoordinatorLogMessages.Rejoined(_logger, id);
            }

            ClusterCoordinatorLogMessages.RollbackDecided(_logger, id, decision.WorldLine, decision.CutFor(id), decision);
            return new ConnectResponse(_worldLine, decision.CutFor(id), true, _state);
        }
    }

    /// <summary>
    /// Makes a journaled decision visible: world-line, view, boundary, then the published state. Under _lock. The
    /// decision is durable already, so a failure here cannot be undone: it stops the coordinator, and the next
    /// incarnation applies the decision from the journal.
    /// </summary>
    private void CommitDecision(RollbackDecision decision)
    {
        try
        {
            ApplyDecision(decision);
        }
        catch (Exception ex)
        {
            var error = new DseCoordinatorException(CoordinatorErrorCode.Unavailable, $"The coordinator could not apply the durable decision of world-line {decision.WorldLine}; it stopped serving and must be restarted.", ex);
            StopServing(ex, error);
            ClusterCoordinatorLogMessages.Faulted(_logger, ex);
            throw error;
        }
    }

    /// <summary>
    /// Stops serving for good: records the fault and fails whatever waits (reports behind a decision, long polls). Under _lock.
    /// </summary>
    private void StopServing(Exception cause, DseCoordinatorException error)
    {
        _fault ??= cause;
        _blocked?.TrySetException(error);
        _blocked = null;
        _changed.TrySetException(error);
        _faulted.TrySetResult();
    }

    private void ApplyDecision(RollbackDecision decision)
    {
        _worldLine = decision.WorldLine;
        _decisions.Add(decision);
        if (_decisions.Count > _maxRetainedDecisions)
        {
            _decisions.RemoveAt(0);
        }

        _graph.Apply(decision);
        if (decision.Reason == RollbackReason.Restart)
        {
            // The restarted participant restores exactly its cut.
            _graph.Acknowledge(decision.FailedObjectId, decision.WorldLine, decision.CutFor(decision.FailedObjectId));
        }

        if (_awaiting is null)
        {
            _graph.AdvanceCommitted();
        }

        // Reports (and so the sign of life they carry) waited while the decision was journaled: no one goes silent
        // for a slow journal write.
        long now = _time.GetTimestamp();
        foreach (var member in _members.Values)
        {
            member.LastSeen = now;
        }

        Publish();
        var blocked = _blocked;
        _blocked = null;
        blocked?.TrySetResult();
    }

    /// <summary>
    /// The prefix of <paramref name="listed"/> above the committed version that the current lineage can still contain:
    /// it stops at the first version a later decision removed (by its own number, or because it observed a version of
    /// another participant above that decision's cut), because what follows a lost version in a lineage is lost too.
    /// Under _lock.
    /// </summary>
    private List<VersionReport> Surviving(long id, IReadOnlyList<VersionReport> listed)
    {
        long committed = _graph.CommittedVersion(id);
        var result = new List<VersionReport>(listed.Count);
        foreach (var r in listed)
        {
            if (r.Version <= committed)
            {
                continue;
            }

            if (BeyondRetention(r.WorldLine) || _graph.IsStale(id, r.Version, r.WorldLine, _decisions) || ObservedRemovedState(r))
            {
                break;
            }

            result.Add(r);
        }

        return result;
    }

    /// <summary>Whether a fragment of world-line w observed a version that a decision after w did not keep.</summary>
    private bool ObservedRemovedState(VersionReport report)
    {
        foreach (var decision in _decisions)
        {
            if (decision.WorldLine <= report.WorldLine)
            {
                continue;
            }

            foreach (var d in report.Dependencies)
            {
                // A participant the decision does not list joined later, so the fragment cannot have observed it before.
                if (decision.Cut.TryGetValue(d.ObjectId, out long cut) && d.Version > cut)
                {
                    return true;
                }
            }
        }

        return false;
    }

    /// <summary>Whether world-line <paramref name="worldLine"/> is older than the retained decisions can check. Under _lock.</summary>
    private bool BeyondRetention(long worldLine) => _decisions.Count > 0 && worldLine < _decisions[0].WorldLine - 1;

    /// <inheritdoc />
    public ValueTask<ReportOutcome> ReportPersistedAsync(long objectId, VersionReport report, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(report);
        cancellationToken.ThrowIfCancellationRequested();
        if (report.Version <= 0)
        {
            throw new DseCoordinatorException($"Participant {objectId} reported version {report.Version}; versions start at 1.");
        }

        Task blocked;
        lock (_lock)
        {
            if (_blocked is null)
            {
                return ValueTask.FromResult(ReportLocked(objectId, report));
            }

            blocked = _blocked.Task;
        }

        return ReportAfterDecisionAsync(objectId, report, blocked, cancellationToken);
    }

    private async ValueTask<ReportOutcome> ReportAfterDecisionAsync(long objectId, VersionReport report, Task blocked, CancellationToken cancellationToken)
    {
        while (true)
        {
            await blocked.WaitAsync(cancellationToken).ConfigureAwait(false);
            lock (_lock)
            {
                if (_blocked is null)
                {
                    return ReportLocked(objectId, report);
                }

                blocked = _blocked.Task;
            }
        }
    }

    private ReportOutcome ReportLocked(long objectId, VersionReport report)
    {
        ThrowIfFaulted();
        var member = Known(objectId);
        if (_awaiting is not null && _awaiting.Contains(objectId))
        {
            throw ResyncRequired(objectId);
        }

        member.LastSeen = _time.GetTimestamp();
        if (report.WorldLine > _worldLine)
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.FutureWorldLine, $"Participant {objectId} reported version {report.Version} from world-line {report.WorldLine}, ahead of the coordinator's {_worldLine}.");
        }

        // A report older than the retained decisions cannot be checked against them: refuse it as stale.
        if (BeyondRetention(report.WorldLine) || _graph.IsStale(objectId, report.Version, report.WorldLine, _decisions))
        {
            return ReportOutcome.Stale;
        }

        var outcome = _graph.Add(objectId, report);
        if (outcome == ReportOutcome.Accepted && _awaiting is null && _graph.AdvanceCommitted())
        {
            Publish();
        }

        return outcome;
    }

    /// <inheritdoc />
    public async ValueTask AcknowledgeRollbackAsync(long objectId, long worldLine, long keptThrough, CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        lock (_lock)
        {
            ThrowIfFaulted();
            Known(objectId, allowRemoved: true).LastSeen = _time.GetTimestamp();
            if (worldLine > _worldLine || worldLine <= 0)
            {
                throw new DseCoordinatorException(CoordinatorErrorCode.FutureWorldLine, $"Participant {objectId} acknowledged world-line {worldLine}, which the coordinator has not decided.");
            }

            if (_graph.KeptThrough(objectId, worldLine) == keptThrough)
            {
                return;
            }
        }

        // What a participant kept decides later staleness checks, also after a coordinator restart: journal it first.
        await JournalAsync(new RollbackAcknowledgedEntry(objectId, worldLine, keptThrough), cancellationToken).ConfigureAwait(false);
        lock (_lock)
        {
            _graph.Acknowledge(objectId, worldLine, keptThrough);
        }
    }

    /// <inheritdoc />
    public ValueTask HeartbeatAsync(long objectId, CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        lock (_lock)
        {
            ThrowIfFaulted();
            Known(objectId).LastSeen = _time.GetTimestamp();
        }

        return ValueTask.CompletedTask;
    }

    /// <inheritdoc />
    public ValueTask<ClusterState> GetStateAsync(CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        lock (_lock)
        {
            ThrowIfFaulted();
            return ValueTask.FromResult(_state);
        }
    }

    /// <inheritdoc />
    public async ValueTask<ClusterState> WaitForChangeAsync(long knownEpoch, CancellationToken cancellationToken = default)
    {
        Task<ClusterState> next;
        lock (_lock)
        {
            ThrowIfFaulted();
            if (_state.Epoch > knownEpoch)
            {
                return _state;
            }

            next = _changed.Task;
        }

        return await next.WaitAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Stops the heartbeat timer; the state stays readable.</summary>
    public ValueTask DisposeAsync() => _heartbeatTimer?.DisposeAsync() ?? ValueTask.CompletedTask;

    private static TaskCompletionSource<ClusterState> NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    private static void ValidateAscending(long objectId, IReadOnlyList<VersionReport> versions)
    {
        ArgumentNullException.ThrowIfNull(versions);
        long previous = 0;
        foreach (var r in versions)
        {
            if (r is null || r.Version <= previous)
            {
                throw new DseCoordinatorException($"Participant {objectId} listed version {r?.Version} after {previous}; persisted versions must be positive and ascending.");
            }

            previous = r.Version;
        }
    }

    /// <summary>The member record of a registered participant, or the documented error. Under _lock.</summary>
    private Member Known(long objectId, bool allowRemoved = false)
    {
        if (!_members.TryGetValue(objectId, out var member))
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.UnknownParticipant, $"Participant {objectId} is not registered; connect before anything else.");
        }

        if (member.Removed && !allowRemoved)
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.Removed, $"Participant {objectId} was removed from the cluster ({member.RemovedBecause}); restart it so that it connects again.");
        }

        return member;
    }

    private DseCoordinatorException ResyncRequired(long objectId) =>
        new(CoordinatorErrorCode.ResyncRequired, $"The coordinator restarted (incarnation {_incarnation}); participant {objectId} must resync its durable versions before reporting.");

    private void ThrowIfFaulted()
    {
        if (_fault is not null)
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.Unavailable, "The coordinator stopped serving because its journal failed; restart it.", _fault);
        }
    }

    /// <summary>Appends to the journal, if any; a failure stops the coordinator, because the outcome is unknown.</summary>
    private async ValueTask JournalAsync(ClusterJournalEntry entry, CancellationToken cancellationToken = default)
    {
        if (_journal is null)
        {
            return;
        }

        try
        {
            await _journal.AppendAsync(entry, cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            throw;
        }
        catch (Exception ex)
        {
            lock (_lock)
            {
                StopServing(ex, new DseCoordinatorException(CoordinatorErrorCode.Unavailable, "The coordinator stopped serving because its journal failed; restart it.", ex));
            }

            ClusterCoordinatorLogMessages.Faulted(_logger, ex);
            throw new DseCoordinatorException(CoordinatorErrorCode.Unavailable, $"The coordinator could not make a cluster change durable ({entry.GetType().Name}); it stopped serving and must be restarted.", ex);
        }
    }

    private void Publish()
    {
        _epoch++;
        _state = new ClusterState(_epoch, _worldLine, _decisions.ToArray(), _graph.CommittedSnapshot())
        {
            Incarnation = _incarnation,
            IsRecovering = _awaiting is not null,
        };
        var signal = _changed;
        _changed = NewSignal();
        signal.TrySetResult(_state);
    }

    private enum ConnectKind
    {
        ColdStart,
        New,
        RecoveryAnswer,
        Restart,
    }

    /// <summary>A registered participant. Guarded by the coordinator's _lock.</summary>
    private sealed class Member(long lastSeen)
    {
        public long LastSeen { get; set; } = lastSeen;

        public bool Removed { get; set; }

        public string RemovedBecause { get; set; } = string.Empty;
    }
}
