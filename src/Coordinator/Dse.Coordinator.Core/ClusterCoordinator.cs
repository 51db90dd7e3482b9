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
public sealed class ClusterCoordinator : IDseCoordinator, IAsyncDisposable
{
    // This class serves the steady state and publishes the cluster state; its collaborators own the rest of the state,
    // all guarded by one lock (Sync): ClusterMembers (membership and liveness), DecisionHistory (retained decisions,
    // world-line), DependencyGraph (the view and the boundary), CoordinatorRecovery (recovery after a restart),
    // ColdStart (a whole-cluster restart), WantedPublisher (wanted versions published alone) and HeartbeatSweep (the
    // removal of silent participants).
    private readonly Lock _lock = new();
    private readonly ILogger _logger;
    private readonly IClusterJournal? _journal;
    private readonly TimeProvider _time;
    private readonly long _incarnation;

    // Serializes the journaled mutations (registrations, decisions, resyncs, the end of recovery). Taken before _lock,
    // never while holding it.
    private readonly SemaphoreSlim _mutate = new(1, 1);

    // The collaborators; their state is guarded by _lock.
    private readonly DependencyGraph _graph = new();
    private readonly DecisionHistory _history;
    private readonly ClusterMembers _members = new();
    private readonly CoordinatorRecovery _recovery;
    private readonly WantedPublisher _wanted;
    // Null without a heartbeat timeout: then no participant is removed for its silence.
    private readonly HeartbeatSweep? _sweep;

    // Set when the options expect a cold start and the journal holds no registration; kept once done, because its
    // expected ids still decide which new participants may bring stored versions.
    private readonly ColdStart? _coldStart;

    // Guarded by _lock: _state is the published snapshot, _epoch its number; _changed completes when it is replaced.
    private long _epoch;
    private ClusterState _state = ClusterState.Empty;
    private TaskCompletionSource<ClusterState> _changed = NewSignal();

    // Set while a decision is computed but not yet durable: reports wait for it, so the boundary cannot pass its cut.
    private TaskCompletionSource? _blocked;

    // Set once the journal failed: the outcome of the last append is unknown, so the coordinator stops serving.
    private Exception? _fault;
    private readonly TaskCompletionSource _faulted = new(TaskCreationOptions.RunContinuationsAsynchronously);

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
        _history = new DecisionHistory(options.MaxRetainedDecisions);
        _journal = journal;
        _time = options.TimeProvider;
        _incarnation = incarnation;
        _epoch = incarnation << 32;
        _recovery = new CoordinatorRecovery(this, incarnation);
        _wanted = new WantedPublisher(this);
        if (coldStart && options.ExpectedParticipants is { } expected)
        {
            _coldStart = new ColdStart(this, expected);
        }

        if (options.HeartbeatTimeout is { } timeout)
        {
            _sweep = new HeartbeatSweep(this, timeout);
        }
    }

    /// <summary>Number of rollback decisions made so far (the current world-line).</summary>
    public long WorldLine
    {
        get
        {
            lock (_lock)
            {
                return _history.WorldLine;
            }
        }
    }

    /// <summary>The coordinator incarnation: 1 for a fresh one, one more with every recovery from the journal.</summary>
    public long Incarnation => _incarnation;

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

    /// <summary>
    /// A read-only copy of the coordinator's view, for dashboards and tools: every participant with its liveness,
    /// committed and reported versions and its newest uncommitted versions with their dependencies, and the retained
    /// decisions with what each participant lost to them. Takes the coordinator's lock briefly; changes nothing.
    /// </summary>
    /// <param name="maxVersionsPerParticipant">How many of each participant's newest uncommitted versions to copy; default 32.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="maxVersionsPerParticipant"/> is negative.</exception>
    public ClusterInspection Inspect(int maxVersionsPerParticipant = 32)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(maxVersionsPerParticipant);
        lock (_lock)
        {
            return ClusterInspectionCapture.Capture(
                _members, _graph, _history, _time, maxVersionsPerParticipant, _incarnation, _state.Epoch, _recovery.IsRecovering, _fault?.Message);
        }
    }

    /// <summary>The lock that guards this coordinator's state and its collaborators'.</summary>
    internal Lock Sync => _lock;

    /// <summary>The graph view. Under <see cref="Sync"/>.</summary>
    internal DependencyGraph Graph => _graph;

    /// <summary>The retained decisions and the world-line. Under <see cref="Sync"/>.</summary>
    internal DecisionHistory History => _history;

    /// <summary>The registered participants. Under <see cref="Sync"/>.</summary>
    internal ClusterMembers Members => _members;

    /// <summary>The published state. Under <see cref="Sync"/>.</summary>
    internal ClusterState PublishedState => _state;

    /// <summary>The clock of heartbeats.</summary>
    internal TimeProvider Time => _time;

    /// <summary>Serializes the journaled mutations; taken before <see cref="Sync"/>, never while holding it.</summary>
    internal SemaphoreSlim Mutation => _mutate;

    /// <summary>Whether the coordinator stopped serving. Under <see cref="Sync"/>.</summary>
    internal bool IsFaulted => _fault is not null;

    /// <summary>Whether the coordinator recovers from its own restart. Under <see cref="Sync"/>.</summary>
    internal bool IsRecovering => _recovery.IsRecovering;

    /// <summary>Whether a cold start waits for its expected participants. Under <see cref="Sync"/>.</summary>
    internal bool IsColdStarting => _coldStart is { IsDone: false };

    /// <summary>The coordinator's logger, for its collaborators.</summary>
    internal ILogger Logger => _logger;

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
            coordinator._recovery.Replay(recovered);
            await coordinator.JournalAsync(new CoordinatorStartedEntry(lastIncarnation + 1), cancellationToken).ConfigureAwait(false);
            lock (coordinator._lock)
            {
                coordinator.Publish();
            }

            ClusterCoordinatorLogMessages.Started(coordinator._logger, lastIncarnation + 1, coordinator._members.Count, coordinator._history.WorldLine, coordinator._recovery.AwaitingCount);

            return coordinator;
        }
        catch
        {
            await coordinator.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <inheritdoc />
    public async ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(request);
        cancellationToken.ThrowIfCancellationRequested();
        RequestRules.ValidateAscending(request.ObjectId, request.PersistedVersions);

        Task<ConnectResponse>? coldStart = null;
        await _mutate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ConnectKind kind;
            lock (_lock)
            {
                ThrowIfFaulted();

                // A cold start is only ever entered, never re-entered: once it completed it is over for good.
                if (_coldStart is { IsDone: false })
                {
                    kind = ConnectKind.ColdStart;
                    coldStart = _coldStart.Join(request);
                }
                else if (!_members.Contains(request.ObjectId))
                {
                    kind = ConnectKind.New;
                    if (_coldStart is not null && request.PersistedVersions.Count > 0)
                    {
                        // Storage from before the restart that the cold start never saw cannot be checked against its cut.
                        throw new DseCoordinatorException(CoordinatorErrorCode.NotExpected, $"Participant {request.ObjectId} brings stored versions but was not among the expected participants of the cold start ({_coldStart.ExpectedList}); add it to ExpectedParticipants or start it on empty storage.");
                    }
                }
                else
                {
                    kind = _recovery.IsRecovering ? ConnectKind.RecoveryAnswer : ConnectKind.Restart;
                }
            }

            switch (kind)
            {
                case ConnectKind.ColdStart:
                    if (_coldStart!.IsReady())
                    {
                        // Everyone's cold start, not only this caller's: its cancellation must not abandon it halfway.
                        await _coldStart.FinishAsync(CancellationToken.None).ConfigureAwait(false);
                    }

                    break;
                case ConnectKind.New:
                    return await RegisterAsync(request).ConfigureAwait(false);
                case ConnectKind.RecoveryAnswer:
                    return await _recovery.AnswerWithConnectAsync(request).ConfigureAwait(false);
                default:
                    return await RestartAsync(request).ConfigureAwait(false);
            }
        }
        finally
        {
            _mutate.Release();
        }

        // Outside the mutation lock: the other cold-start participants must be able to join meanwhile.
        return await _coldStart!.AwaitAsync(request.ObjectId, coldStart!, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>A new id joins: journaled first, then its stored versions enter the graph.</summary>
    private async ValueTask<ConnectResponse> RegisterAsync(ConnectRequest request)
    {
        long id = request.ObjectId;
        await JournalAsync(new ParticipantRegisteredEntry(id)).ConfigureAwait(false);
        lock (_lock)
        {
            _members.Register(id, _time.GetTimestamp());
            _graph.AddParticipant(id);
            var surviving = _history.Surviving(id, request.PersistedVersions, _graph);
            foreach (var r in surviving)
            {
                _graph.Add(id, r);
            }

            long restore = surviving.Count > 0 ? surviving[^1].Version : 0;
            if (!_recovery.IsRecovering)
            {
                _graph.AdvanceCommitted();
            }

            Publish();
            ClusterCoordinatorLogMessages.Registered(_logger, id, restore, _history.WorldLine);
            return new ConnectResponse(_history.WorldLine, restore, false, _state);
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
        Dictionary<long, long> reportedBefore;
        lock (_lock)
        {
            var surviving = _history.Surviving(id, request.PersistedVersions, _graph);
            long cap = surviving.Count > 0 ? surviving[^1].Version : _graph.CommittedVersion(id);
            reportedBefore = _graph.ReportedSnapshot();
            _graph.ReplaceUncommitted(id, surviving);
            var cut = _graph.ComputeClosure(new Dictionary<long, long> { [id] = cap });
            decision = new RollbackDecision(_history.WorldLine + 1, id, cut, RollbackReason.Restart);
            _blocked = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        await JournalAsync(new RollbackDecidedEntry(decision)).ConfigureAwait(false);
        lock (_lock)
        {
            var member = _members[id];
            bool wasRemoved = member.Removed;
            member.Removed = false;
            member.LastSeen = _time.GetTimestamp();

            // A restart is a new incarnation of the participant: what the old one reported no longer describes it.
            member.Statistics = null;
            CommitDecision(decision, reportedBefore);
            if (wasRemoved)
            {
                ClusterCoordinatorLogMessages.Rejoined(_logger, id);
            }

            ClusterCoordinatorLogMessages.RollbackDecided(_logger, id, decision.WorldLine, decision.CutFor(id), decision);
            return new ConnectResponse(_history.WorldLine, decision.CutFor(id), true, _state);
        }
    }

    /// <summary>
    /// Makes a journaled decision visible: world-line, view, boundary, then the published state. Under _lock. The
    /// decision is durable already, so a failure here cannot be undone: it stops the coordinator, and the next
    /// incarnation applies the decision from the journal.
    /// </summary>
    private void CommitDecision(RollbackDecision decision, IReadOnlyDictionary<long, long> reportedBefore)
    {
        try
        {
            ApplyDecision(decision, reportedBefore);
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

    private void ApplyDecision(RollbackDecision decision, IReadOnlyDictionary<long, long> reportedBefore)
    {
        _history.Record(decision, reportedBefore);
        _graph.Apply(decision);
        if (decision.Reason == RollbackReason.Restart)
        {
            // The restarted participant restores exactly its cut.
            _graph.Acknowledge(decision.FailedObjectId, decision.WorldLine, decision.CutFor(decision.FailedObjectId));
        }

        if (!_recovery.IsRecovering)
        {
            _graph.AdvanceCommitted();
        }

        // Reports (and so the sign of life they carry) waited while the decision was journaled: no one goes silent
        // for a slow journal write.
        _members.TouchAll(_time.GetTimestamp());

        Publish();
        var blocked = _blocked;
        _blocked = null;
        blocked?.TrySetResult();
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

        if (CoordinatorInstrumentation.Reports.Enabled)
        {
            CoordinatorInstrumentation.Reports.Add(1);
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
        var member = _members.Known(objectId);
        if (_recovery.Awaits(objectId))
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.ResyncRequired, $"The coordinator restarted (incarnation {_incarnation}); participant {objectId} must resync its durable versions before reporting.");
        }

        member.LastSeen = _time.GetTimestamp();
        long worldLine = _history.WorldLine;
        if (report.WorldLine > worldLine)
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.FutureWorldLine, $"Participant {objectId} reported version {report.Version} from world-line {report.WorldLine}, ahead of the coordinator's {worldLine}.");
        }

        // A report older than the retained decisions cannot be checked against them: refuse it as stale.
        if (_history.BeyondRetention(report.WorldLine) || _graph.IsStale(objectId, report.Version, report.WorldLine, _history.Retained))
        {
            return ReportOutcome.Stale;
        }

        var outcome = _graph.Add(objectId, report);
        if (outcome == ReportOutcome.Accepted && !_recovery.IsRecovering && _graph.AdvanceCommitted())
        {
            Publish();
        }
        else
        {
            _wanted.ScheduleIfChanged();
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
            _members.Known(objectId, allowRemoved: true).LastSeen = _time.GetTimestamp();
            if (worldLine > _history.WorldLine || worldLine <= 0)
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
    public async ValueTask<ClusterState> ResyncAsync(ResyncRequest request, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(request.CommittedView);
        cancellationToken.ThrowIfCancellationRequested();
        RequestRules.ValidateAscending(request.ObjectId, request.DurableVersions);
        await _mutate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            return await _recovery.ResyncAsync(request).ConfigureAwait(false);
        }
        finally
        {
            _mutate.Release();
        }
    }

    /// <inheritdoc />
    public ValueTask HeartbeatAsync(long objectId, CancellationToken cancellationToken = default) =>
        HeartbeatCoreAsync(objectId, null, cancellationToken);

    /// <inheritdoc />
    /// <remarks>The statistics are kept in memory only (<see cref="Inspect"/>); a restart of the coordinator forgets them.</remarks>
    public ValueTask HeartbeatAsync(long objectId, ParticipantStatistics statistics, CancellationToken cancellationToken = default) =>
        HeartbeatCoreAsync(objectId, RequestRules.AcceptStatistics(objectId, statistics), cancellationToken);

    private ValueTask HeartbeatCoreAsync(long objectId, ParticipantStatistics? statistics, CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        lock (_lock)
        {
            ThrowIfFaulted();
            _members.Known(objectId).Heard(_time.GetTimestamp(), statistics);
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

            // An explicit read gets wanted versions at once (a participant refreshing because it waits on one).
            if (!_recovery.IsRecovering && _wanted.HasUnpublished)
            {
                Publish();
            }

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
            bool recovering;
            lock (_lock)
            {
                ThrowIfFaulted();
                var member = _members.Known(objectId, allowRemoved: true);
                if (member.Removed)
                {
                    return false;
                }

                recovering = _recovery.IsRecovering;
                if (recovering)
                {
                    endRecovery = _recovery.RemoveWhileRecovering(objectId, member);
                }
            }

            if (endRecovery)
            {
                await _recovery.EndAsync().ConfigureAwait(false);
            }
            else if (!recovering)
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
    public Task<IReadOnlyList<long>> RemoveSilentParticipantsAsync(CancellationToken cancellationToken = default) =>
        _sweep?.RemoveSilentAsync(cancellationToken) ?? Task.FromResult<IReadOnlyList<long>>([]);

    /// <summary>
    /// The removal decision: the cap is what the participant reported, so dependents of anything it did not report roll
    /// back and the boundary can move again. Journaled before anyone sees it. Called under _mutate, outside recovery.
    /// </summary>
    internal async ValueTask DecideRemovalAsync(long id, string because)
    {
        RollbackDecision decision;
        Dictionary<long, long> reportedBefore;
        lock (_lock)
        {
            ThrowIfFaulted();
            decision = new RollbackDecision(_history.WorldLine + 1, id, _graph.ComputeClosure(), RollbackReason.Removed);
            reportedBefore = _graph.ReportedSnapshot();
            _blocked = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        await JournalAsync(new RollbackDecidedEntry(decision)).ConfigureAwait(false);
        lock (_lock)
        {
            var member = _members[id];
            member.Removed = true;
            member.RemovedBecause = $"{because}; removed at world-line {decision.WorldLine}";
            CommitDecision(decision, reportedBefore);
            ClusterCoordinatorLogMessages.ParticipantRemoved(_logger, id, because, decision.WorldLine, decision);
        }
    }

    /// <summary>Stops the timers (heartbeat sweep, wanted-version publish); the state stays readable.</summary>
    public ValueTask DisposeAsync()
    {
        _wanted.Stop();
        return _sweep?.DisposeAsync() ?? ValueTask.CompletedTask;
    }

    /// <summary>Throws the documented refusal once the coordinator stopped serving. Under <see cref="Sync"/>.</summary>
    internal void ThrowIfFaulted()
    {
        if (_fault is not null)
        {
            throw new DseCoordinatorException(CoordinatorErrorCode.Unavailable, "The coordinator stopped serving because its journal failed; restart it.", _fault);
        }
    }

    /// <summary>Appends to the journal, if any; a failure stops the coordinator, because the outcome is unknown.</summary>
    internal async ValueTask JournalAsync(ClusterJournalEntry entry, CancellationToken cancellationToken = default)
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

    /// <summary>Publishes the current world-line, decisions and boundary as the next state. Under <see cref="Sync"/>.</summary>
    internal void Publish()
    {
        _epoch++;
        _wanted.OnPublished();
        _state = new ClusterState(_epoch, _history.WorldLine, _history.Snapshot(), _graph.CommittedSnapshot())
        {
            Incarnation = _incarnation,
            IsRecovering = _recovery.IsRecovering,
            Wanted = _graph.WantedSnapshot(),
        };
        var signal = _changed;
        _changed = NewSignal();
        signal.TrySetResult(_state);
    }

    private static TaskCompletionSource<ClusterState> NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    private enum ConnectKind
    {
        ColdStart,
        New,
        RecoveryAnswer,
        Restart,
    }
}
