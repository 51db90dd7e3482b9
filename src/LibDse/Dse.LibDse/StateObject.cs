using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse;

/// <summary>
/// A unit of application state under distributed speculative execution. Subclasses say how to persist and restore the
/// state (Persist / Restore / Prune / ListVersions); the runtime decides when, tracks the dependencies of each version
/// through the headers of the messages the state's actions consume and produce, and rolls the state back when the
/// coordinator decides so after a failure.
/// </summary>
/// <remarks>
/// The runtime never runs Persist or Restore concurrently with an action or with each other. Actions run concurrently
/// with each other: state touched by several must be thread-safe on its own. Actions on the same StateObject must not
/// nest (an action waiting for another to start would wait for a version advance that waits for it).
/// </remarks>
public abstract class StateObject : IAsyncDisposable
{
    // This class is the action and version core: the gate, the version, the world-line, persisting and restoring. Its
    // collaborators own the rest: VersionBook (versions handed to Persist, what rollbacks did), ClusterViewCell (the
    // cluster state last heard) and CoordinatorSession (reports, acknowledgements, resyncs, heartbeats, following the
    // coordinator). The protocol's checks and waits around an action live beside it: ActionAdmission (may a message
    // start one), ActionStartWaits (until it may) and CommitWaits (until an own version is recoverable).
    private readonly DseOptions _options;
    private readonly ILogger _logger;
    private readonly ActionGate _gate = new();

    // The single writer of the gate: version advances, rollbacks, prunes. Held while the gate is closed. Lock order:
    // writer, then the session's reporting lock, then the gate.
    private readonly SemaphoreSlim _writer = new(1, 1);

    private readonly VersionBook _book = new();
    private readonly CommitLagTracker _commitLag;
    private readonly CoordinatorSession _session;

    // The cluster state as last heard from the coordinator; replaced only by a newer one (PublishView).
    private readonly ClusterViewCell _view = new();
    private readonly ParticipantStatisticsSource _statistics = new();

    // Written only by the writer while the gate is closed; read inside actions, where they cannot change.
    private long _version;
    private long _worldLine;
    private DependencySet _deps = new();
    private int _dirty;

    // Set once, at the end of a successful connect.
    private IDseCoordinator? _coordinator;
    private Exception? _fault;
    private long _lastAdvanceTimestamp;

    // The highest committed version pruned from storage. Written by the writer.
    private long _pruned;

    // The highest version handed to Persist (or found in storage at connect); under _writer.
    private long _persistedThrough;

    /// <summary>Creates the StateObject; call <see cref="ConnectAsync"/> before anything else.</summary>
    /// <exception cref="ArgumentException">The options are invalid; the message names the option.</exception>
    protected StateObject(DseOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        _options = options;
        _logger = options.LoggerFactory?.CreateLogger(GetType()) ?? NullLogger.Instance;
        _session = new CoordinatorSession(this, _book, _logger);
        _commitLag = new CommitLagTracker(options.ObjectId, options.TimeProvider);
    }

    /// <summary>The predetermined id.</summary>
    public long Id => _options.ObjectId;

    /// <summary>The runtime's logger, for subclasses.</summary>
    protected internal ILogger Logger => _logger;

    /// <summary>The options the StateObject runs with.</summary>
    public DseOptions Options => _options;

    /// <summary>The current, in-memory version: what actions running now belong to.</summary>
    public long CurrentVersion => Volatile.Read(ref _version);

    /// <summary>The world-line this StateObject is in.</summary>
    public long WorldLine => Volatile.Read(ref _worldLine);

    /// <summary>The highest own version inside the recoverable boundary, as last heard from the coordinator.</summary>
    public long CommittedVersion => ClusterView.CommittedVersion(Id);

    /// <summary>The cluster state as last heard from the coordinator.</summary>
    public ClusterState ClusterView => _view.Current;

    /// <summary>Whether <see cref="ConnectAsync"/> has completed.</summary>
    public bool IsConnected => _coordinator is not null;

    /// <summary>The error that faulted this StateObject, if any.</summary>
    public Exception? Fault => Volatile.Read(ref _fault);

    /// <summary>
    /// Registers a queue whose depths this StateObject's heartbeats report to the coordinator (read once per
    /// heartbeat), so that its dashboard and <c>dse status</c> show them; dispose the result to stop. A reader that
    /// throws is left out of that heartbeat. A DARQ with general speculation registers itself.
    /// </summary>
    /// <param name="name">Unique per StateObject: 1 to <see cref="ParticipantStatistics.MaxQueueNameLength"/> characters, no control characters.</param>
    /// <param name="read">Reads the depths now; called on the heartbeat's thread. Its <see cref="QueueStatistics.Name"/> is replaced by <paramref name="name"/>.</param>
    /// <exception cref="ArgumentException">The name is invalid or taken, or <see cref="ParticipantStatistics.MaxQueues"/> queues are registered.</exception>
    public IDisposable RegisterQueue(string name, Func<QueueStatistics> read) => _statistics.RegisterQueue(name, read);

    /// <summary>What the next heartbeat reports about this StateObject.</summary>
    public ParticipantStatistics ReadStatistics() => _statistics.Snapshot(CurrentVersion, WorldLine);

    /// <summary>The barrier-wait histogram and registered queues its heartbeats report.</summary>
    internal ParticipantStatisticsSource Statistics => _statistics;

    /// <summary>
    /// Persists the current state as <paramref name="version"/> together with <paramref name="metadata"/>, and calls
    /// <paramref name="completion"/> once durable. May return before the write is durable, but must have captured the
    /// state by then: actions resume as soon as it returns.
    /// </summary>
    protected abstract void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion);

    /// <summary>
    /// Loads <paramref name="version"/> (0: the initial, empty state) and returns its metadata (empty for 0). Called after
    /// a restart and on a rollback; afterwards no later version may be listed by <see cref="ListVersionsAsync"/>, even
    /// after a crash, including any Persist still in flight.
    /// </summary>
    protected abstract ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken);

    /// <summary>Signals that <paramref name="version"/> and every earlier version will never be restored again.</summary>
    protected abstract void Prune(long version);

    /// <summary>Lists every unpruned, durable version with its metadata, in ascending order.</summary>
    protected abstract ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken);

    /// <summary>
    /// Whether the group commit may persist a version now (default true). A store whose persists cannot overlap returns
    /// false while one is in flight: the periodic advance then skips its tick and the version grows until the store is
    /// ready, rather than queue a persist that holds actions up. Advances that must happen (commit ordering, explicit,
    /// a barrier's) do not ask.
    /// </summary>
    protected virtual bool CanPersistNow => true;

    /// <summary>
    /// Connects to the coordinator; must be called exactly once before anything else. Lists the stored versions,
    /// registers them, and restores the version the coordinator names: the latest one after a clean start, or the
    /// surviving one after a restart, which the coordinator treats as a failure and answers with a rollback decision.
    /// </summary>
    /// <exception cref="DseHeaderFormatException">Stored version metadata is corrupt.</exception>
    /// <exception cref="DseCoordinatorException">The coordinator refused the connect (see its <see cref="DseCoordinatorException.Code"/>).</exception>
    public async ValueTask ConnectAsync(IDseCoordinator coordinator, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(coordinator);
        while (true)
        {
            var retry = await TryConnectCoreAsync(coordinator, cancellationToken).ConfigureAwait(false);
            if (retry is null)
            {
                return;
            }

            // The coordinator is recovering from its own restart and recorded our listing; connect again once it moves on.
            await coordinator.WaitForChangeAsync(retry.Epoch, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// One connect attempt: like <see cref="ConnectAsync"/>, but returns false instead of waiting when the coordinator
    /// is recovering from its own restart and asks the participant to connect again once its state changes.
    /// </summary>
    public async ValueTask<bool> TryConnectAsync(IDseCoordinator coordinator, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(coordinator);
        return await TryConnectCoreAsync(coordinator, cancellationToken).ConfigureAwait(false) is null;
    }

    /// <summary>Returns null once connected, or the state to wait past before trying again.</summary>
    private async ValueTask<ClusterState?> TryConnectCoreAsync(IDseCoordinator coordinator, CancellationToken cancellationToken)
    {
        await _writer.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (_coordinator is not null)
            {
                throw new InvalidOperationException($"StateObject {Id} is already connected; Connect must be called exactly once.");
            }

            var listed = await ListVersionsAsync(cancellationToken).ConfigureAwait(false);
            var reports = VersionMetadata.DecodeListing(Id, listed, out var discarded);
            if (discarded is { } lost)
            {
                DseLogMessages.ImplausibleVersionDiscarded(_logger, Id, lost.Version, lost.Reason);
            }

            long highest = listed.Count > 0 ? listed[^1].Version : 0;
            _persistedThrough = highest;

            var response = await coordinator.ConnectAsync(new ConnectRequest(Id, reports), cancellationToken).ConfigureAwait(false);
            if (response.MustRetry)
            {
                return response.State;
            }

            await RestoreAsync(response.RestoreVersion, cancellationToken).ConfigureAwait(false);

            long committed = response.State.CommittedVersion(Id);
            _book.Restart(reports, committed, response.RestoreVersion, response.WorldLine);

            // Numbers above the surviving storage may have been used in memory before a crash; reusing them is safe
            // because the new world-line tells the two lineages apart (old headers are discarded, old sthreads die).
            _version = Math.Max(highest, response.RestoreVersion) + 1;
            _worldLine = response.WorldLine;
            _deps = new DependencySet();
            _pruned = committed;
            _view.Initialize(response.State);
            _lastAdvanceTimestamp = _options.TimeProvider.GetTimestamp();
            _session.OnConnected(response.State.Incarnation, _lastAdvanceTimestamp);
            _coordinator = coordinator;
            DseTelemetry.Track(this);
            DseLogMessages.Connected(_logger, Id, response.RestoreVersion, response.WorldLine, response.IsRestart);
        }
        finally
        {
            _writer.Release();
        }

        if (_options.RunBackgroundTasks)
        {
            _session.StartBackground();
        }

        return null;
    }

    /// <summary>
    /// Does the runtime's periodic work once: applies the coordinator's decisions and boundary, reports durable versions,
    /// and advances the version if the group-commit period has passed and anything changed. The background tasks call
    /// this on their own unless <see cref="DseOptions.RunBackgroundTasks"/> is off.
    /// </summary>
    public async ValueTask RefreshAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfNotReady();
        var state = await _coordinator!.GetStateAsync(cancellationToken).ConfigureAwait(false);
        await _session.ApplyClusterStateAsync(state, cancellationToken).ConfigureAwait(false);
        await _session.FlushReportsAsync(cancellationToken).ConfigureAwait(false);
        if (_options.TimeProvider.GetElapsedTime(_lastAdvanceTimestamp) >= _options.GroupCommitPeriod)
        {
            await AdvanceCoreAsync(0, AdvanceReason.Periodic, cancellationToken).ConfigureAwait(false);
        }

        await _session.HeartbeatIfDueAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Starts an action that consumes a message carrying <paramref name="header"/>, if it can start now. On
    /// <see cref="StartActionStatus.Accepted"/> the caller must end it with <see cref="EndAction"/>.
    /// </summary>
    /// <exception cref="InvalidOperationException">Not connected, or faulted (<see cref="DseFaultedException"/>).</exception>
    public StartActionStatus TryStartAction(in DseHeader header)
    {
        if (header.Kind == DseHeaderKind.Origin)
        {
            var origin = header.GetDependency(0);
            return TryStartAction(header.WorldLine, new ReadOnlySpan<Dependency>(in origin));
        }

        return header.Kind == DseHeaderKind.None ? StartLocal() : TryStartAction(header.WorldLine, header.Dependencies);

        StartActionStatus StartLocal() => TryStartLocalAction() ? StartActionStatus.Accepted : StartActionStatus.Blocked;
    }

    /// <summary>The one path every message start takes: recovery partition, commit ordering, then the dependency edges.</summary>
    private StartActionStatus TryStartAction(long senderWorldLine, ReadOnlySpan<Dependency> dependencies)
    {
        ThrowIfNotReady();
        if (!_gate.TryEnter())
        {
            return StartActionStatus.Blocked;
        }

        // Inside the gate the world-line, version and dependency set stay as read here.
        var status = ActionAdmission.Admit(this, _worldLine, _version, _deps, senderWorldLine, dependencies);
        if (status != StartActionStatus.Accepted)
        {
            _gate.Exit();
        }

        return status;
    }

    /// <summary>
    /// Starts an action that consumes a message carrying <paramref name="header"/>, waiting as the protocol requires
    /// (for a version advance or a pending rollback). Returns <c>false</c> if the message comes from rolled-back state
    /// and must be discarded; on <c>true</c> end the action with <see cref="EndAction"/>.
    /// </summary>
    public ValueTask<bool> StartActionAsync(DseHeader header, CancellationToken cancellationToken = default)
    {
        var status = TryStartAction(header);
        return status switch
        {
            StartActionStatus.Accepted => new ValueTask<bool>(true),
            StartActionStatus.Discard => new ValueTask<bool>(false),
            _ => ActionStartWaits.StartAsync(this, header, status, cancellationToken),
        };
    }

    /// <summary>Parses <paramref name="header"/> and starts an action consuming it; see <see cref="StartActionAsync(DseHeader, CancellationToken)"/>.</summary>
    /// <exception cref="DseHeaderFormatException">The header is malformed or truncated.</exception>
    public ValueTask<bool> StartActionAsync(ReadOnlyMemory<byte> header, CancellationToken cancellationToken = default) =>
        StartActionAsync(header.IsEmpty ? default : DseHeader.Parse(header.Span), cancellationToken);

    /// <summary>Starts an action that consumes no message, if no version advance or rollback holds the StateObject.</summary>
    public bool TryStartLocalAction()
    {
        ThrowIfNotReady();
        return _gate.TryEnter();
    }

    /// <summary>Starts an action that consumes no message; end it with <see cref="EndAction"/>.</summary>
    public ValueTask StartLocalActionAsync(CancellationToken cancellationToken = default) =>
        TryStartLocalAction() ? ValueTask.CompletedTask : ActionStartWaits.StartLocalAsync(this, cancellationToken);

    /// <summary>Ends the current action and returns the header for the messages it produced.</summary>
    public DseHeader EndAction()
    {
        var header = DseHeader.FromOrigin(Id, _worldLine, _version);
        if (Volatile.Read(ref _dirty) == 0)
        {
            Volatile.Write(ref _dirty, 1);
        }

        _gate.Exit();
        return header;
    }

    /// <summary>
    /// Ends the current action. Speculative mode: returns the header at once. Non-speculative mode: first persists the
    /// action's version and waits until it is recoverable, so nothing leaves before it is durable.
    /// </summary>
    /// <exception cref="DseRolledBackException">Non-speculative mode: the action's version was rolled back while waiting.</exception>
    public ValueTask<DseHeader> EndActionAsync(CancellationToken cancellationToken = default)
    {
        var header = EndAction();
        return _options.Speculative ? new ValueTask<DseHeader>(header) : CommitWaits.PersistThenReturnAsync(this, _book, header, cancellationToken);
    }

    /// <summary>
    /// Suspends the current action and returns an sthread carrying its dependencies (the current vertex), for work that
    /// must not block persistence: long calls, retries, waiting. Must be called inside an action, which it ends.
    /// </summary>
    public Sthread Detach()
    {
        var sthread = new Sthread(this, _worldLine, new Dependency(Id, _version));
        EndAction();
        return sthread;
    }

    /// <summary>
    /// Detaches like <see cref="Detach"/>. Speculative mode: returns at once. Non-speculative mode: first persists the
    /// current version and waits until it is recoverable, so what the sthread sends carries no speculative state.
    /// </summary>
    /// <exception cref="DseRolledBackException">Non-speculative mode: the version was rolled back while waiting.</exception>
    public ValueTask<Sthread> DetachAsync(CancellationToken cancellationToken = default)
    {
        long version = _version;
        long worldLine = _worldLine;
        var sthread = Detach();
        return _options.Speculative ? new ValueTask<Sthread>(sthread) : CommitWaits.PersistThenReturnAsync(this, _book, sthread, version, worldLine, cancellationToken);
    }

    /// <summary>
    /// Merges a detached sthread back: starts an action that consumes its dependencies. Returns <c>false</c> (and starts
    /// nothing) if the state the sthread came from, or anything it observed, was rolled back: discard the sthread.
    /// </summary>
    public ValueTask<bool> MergeAsync(Sthread sthread, CancellationToken cancellationToken = default)
    {
        ThrowIfNotOwner(sthread);
        if (!sthread.TryCatchUp())
        {
            return new ValueTask<bool>(false);
        }

        var status = TryStartAction(sthread.WorldLine, sthread.Dependencies);
        return status switch
        {
            StartActionStatus.Accepted => new ValueTask<bool>(true),
            StartActionStatus.Discard => new ValueTask<bool>(false),
            _ => ActionStartWaits.StartAsync(this, sthread.CurrentHeader(), status, cancellationToken),
        };
    }

    /// <summary>Like <see cref="MergeAsync"/> without waiting; <see cref="StartActionStatus.Discard"/> if the sthread was rolled back.</summary>
    public StartActionStatus TryMerge(Sthread sthread)
    {
        ThrowIfNotOwner(sthread);
        return sthread.TryCatchUp() ? TryStartAction(sthread.WorldLine, sthread.Dependencies) : StartActionStatus.Discard;
    }

    /// <summary>Persists the current version now (even if nothing changed) and starts the next one.</summary>
    public ValueTask AdvanceVersionAsync(CancellationToken cancellationToken = default) =>
        AdvanceCoreAsync(0, AdvanceReason.Explicit, cancellationToken);

    /// <summary>
    /// Makes the current version at least <paramref name="version"/> (commit ordering: a message from a higher version
    /// can only be received once the local version caught up), persisting the current version if it must move.
    /// </summary>
    public ValueTask AdvanceVersionToAsync(long version, CancellationToken cancellationToken = default) =>
        Volatile.Read(ref _version) >= version ? ValueTask.CompletedTask : AdvanceCoreAsync(version, AdvanceReason.CommitOrdering, cancellationToken);

    /// <summary>
    /// A task that completes at the next change of the view, of this object's world-line or of its fault state. Take it
    /// before checking a condition, then await it: a change between the check and the wait is never missed.
    /// </summary>
    internal Task NextChange
    {
        get
        {
            // Signal first, fault second: a fault set after this read either completed this signal or is seen below.
            var signal = _view.NextChange;
            return Volatile.Read(ref _fault) is not null ? Task.CompletedTask : signal;
        }
    }

    /// <summary>Completes when the cluster view changes after <paramref name="knownEpoch"/> (or at once if it already has).</summary>
    public Task WaitForViewChangeAsync(long knownEpoch, CancellationToken cancellationToken = default)
    {
        var signal = _view.NextChange;

        // Checked after reading the signal: a fault set meanwhile completed this signal or a later one is not needed.
        return ClusterView.Epoch > knownEpoch || Volatile.Read(ref _fault) is not null ? Task.CompletedTask : signal.WaitAsync(cancellationToken);
    }

    /// <summary>
    /// Waits until own version <paramref name="version"/>, produced in <paramref name="worldLine"/>, is inside the
    /// recoverable boundary.
    /// </summary>
    /// <exception cref="DseRolledBackException">The version was rolled back before it became recoverable.</exception>
    /// <exception cref="DseFaultedException">The StateObject faulted or was disposed while waiting.</exception>
    public ValueTask WaitForCommitAsync(long version, long worldLine, CancellationToken cancellationToken = default) =>
        CommitWaits.WaitAsync(this, _book, version, worldLine, cancellationToken);

    /// <summary>Stops the background tasks. Outstanding persists are not waited for; the StateObject cannot be used afterwards.</summary>
    public async ValueTask DisposeAsync()
    {
        await DisposeAsyncCore().ConfigureAwait(false);
        GC.SuppressFinalize(this);
    }

    /// <summary>Stops the background tasks; subclasses release their storage after calling this.</summary>
    protected virtual async ValueTask DisposeAsyncCore()
    {
        await _session.StopAsync().ConfigureAwait(false);
        DseTelemetry.Untrack(this);
        Interlocked.CompareExchange(ref _fault, new ObjectDisposedException(GetType().Name, "The StateObject was disposed."), null);
        _view.WakeAll();
    }

    internal void SetFault(Exception error)
    {
        if (Interlocked.CompareExchange(ref _fault, error, null) is null)
        {
            DseLogMessages.Faulted(_logger, Id, error);
            _view.WakeAll();
        }
    }

    internal void ThrowIfNotReady()
    {
        if (_coordinator is null)
        {
            throw new InvalidOperationException($"StateObject {Id} is not connected; call {nameof(ConnectAsync)} first.");
        }

        ThrowIfFaulted();
    }

    internal void ThrowIfFaulted()
    {
        var fault = Volatile.Read(ref _fault);
        if (fault is not null)
        {
            throw fault as DseFaultedException ?? new DseFaultedException($"StateObject {Id} cannot be used: {fault.Message}", fault);
        }
    }

    private void ThrowIfNotOwner(Sthread sthread)
    {
        ArgumentNullException.ThrowIfNull(sthread);
        if (sthread.Owner != this)
        {
            throw new ArgumentException($"The sthread was detached from StateObject {sthread.Owner.Id}; only its owner can merge it, not {Id}.", nameof(sthread));
        }
    }

    /// <summary>Closes the gate; a broken gate (an exit without an entry) faults the StateObject.</summary>
    private async ValueTask CloseGateAsync()
    {
        try
        {
            await _gate.CloseAsync().ConfigureAwait(false);
        }
        catch (InvalidOperationException ex)
        {
            var fault = new DseFaultedException($"StateObject {Id}: {ex.Message}", ex);
            SetFault(fault);

            // Reopen so starts waiting for the gate wake up; they find the fault and throw.
            _gate.Open();
            throw fault;
        }
    }

    private async ValueTask AdvanceCoreAsync(long target, AdvanceReason reason, CancellationToken cancellationToken)
    {
        await _writer.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfNotReady();
            if ((reason == AdvanceReason.CommitOrdering && _version >= target) || (reason == AdvanceReason.Periodic && (Volatile.Read(ref _dirty) == 0 || !CanPersistNow))
                || (reason == AdvanceReason.Wanted && !IsWantedNow(target)))
            {
                return;
            }

            await CloseGateAsync().ConfigureAwait(false);
            try
            {
                if (reason == AdvanceReason.CommitOrdering && Volatile.Read(ref _dirty) == 0 && _deps.IsEmpty)
                {
                    // No action ran in this version, so nothing names it: it takes the sender's number without a persist.
                    Volatile.Write(ref _version, target);
                    DseTelemetry.VersionsRenumbered.Add(1);
                    return;
                }

                AdvanceUnderGate(target);
                if (reason == AdvanceReason.Wanted && _persistedThrough < target)
                {
                    // The current version was below the wanted number: it moved up to it, which is persisted now too.
                    AdvanceUnderGate(0);
                }
            }
            finally
            {
                _gate.Open();
            }
        }
        finally
        {
            _writer.Release();
        }
    }

    private void AdvanceUnderGate(long target)
    {
        long version = _version;
        var record = new VersionRecord(version, _worldLine, _deps.ToArray());
        _book.Add(record);
        _persistedThrough = version;
        Volatile.Write(ref _version, Math.Max(version + 1, target));
        _deps = new DependencySet();
        Volatile.Write(ref _dirty, 0);
        _lastAdvanceTimestamp = _options.TimeProvider.GetTimestamp();
        DseTelemetry.VersionsPersisted.Add(1);
        _commitLag.OnPersisting(version, _lastAdvanceTimestamp);
        try
        {
            Persist(version, VersionMetadata.Encode(record.WorldLine, record.Dependencies), new PersistCompletion(this, record));
        }
        catch (Exception ex)
        {
            SetFault(new DseFaultedException($"Persist of version {version} threw; the StateObject must restart.", ex));
            throw;
        }
    }

    internal void OnDurable(VersionRecord record)
    {
        _book.MarkDurable(record);
        _session.OnDurable();
    }

    /// <summary>Completes when the action gate next opens (after a version advance or rollback).</summary>
    internal Task GateOpened => _gate.WaitOpenAsync();

    /// <summary>The coordinator this object connected to; null before the connect.</summary>
    internal IDseCoordinator? ConnectedCoordinator => _coordinator;

    /// <summary>The highest committed version pruned from storage.</summary>
    internal long PrunedVersion => Volatile.Read(ref _pruned);

    /// <summary>The group-commit advance: persists the current version if anything changed since the last one.</summary>
    internal ValueTask AdvancePeriodicAsync(CancellationToken cancellationToken) => AdvanceCoreAsync(0, AdvanceReason.Periodic, cancellationToken);

    /// <summary>Replaces the view if <paramref name="state"/> is newer; concurrent callers never move it back.</summary>
    internal void PublishView(ClusterState state) => _view.Publish(state);

    /// <summary>
    /// Applies one rollback decision, the next in world-line order: restores the cut unless nothing held depends on lost
    /// state, records the outcome and queues the acknowledgement. All or nothing: a failure faults the StateObject.
    /// </summary>
    /// <returns>Whether it applied the decision (false: applied already); the session then delivers the acknowledgement.</returns>
    internal async ValueTask<bool> ApplyDecisionAsync(RollbackDecision decision, CancellationToken cancellationToken)
    {
        long keptThrough;
        bool restored;
        long lost = 0;
        await _writer.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfNotReady();
            if (decision.WorldLine <= _worldLine)
            {
                return false;
            }

            if (decision.FailedObjectId == Id)
            {
                // Our id restarted elsewhere, or the coordinator removed us: this instance must stop.
                var error = new DseFaultedException(decision.Reason == RollbackReason.Removed
                    ? $"StateObject {Id} was removed from the cluster by the coordinator (world-line {decision.WorldLine}), for example because it missed heartbeats; restart it so that it connects again."
                    : $"StateObject {Id} was superseded: a newer incarnation connected (world-line {decision.WorldLine}).");
                SetFault(error);
                throw error;
            }

            // Lock order writer -> reporting -> gate. Taking the reporting lock before the gate closes means a slow
            // coordinator call in flight delays the rollback without blocking actions, and the wait can be cancelled.
            await _session.EnterReportingAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                // From here on the rollback is all or nothing: no cancellation, and any failure faults the object
                // (fail-restart), because a half-applied rollback cannot be told apart from a kept state afterwards.
                await CloseGateAsync().ConfigureAwait(false);
                try
                {
                    long cut = decision.CutFor(Id);
                    restored = !CanKeep(decision, cut);
                    if (restored)
                    {
                        lost = _version - cut;
                        await RestoreAsync(cut, CancellationToken.None).ConfigureAwait(false);
                        _book.DiscardAbove(cut);
                        _commitLag.DiscardAbove(cut);
                        _persistedThrough = Math.Min(_persistedThrough, cut);

                        // The current number was used by lost actions' headers: start a fresh one.
                        _version++;
                        _deps = new DependencySet();
                        keptThrough = cut;
                    }
                    else
                    {
                        keptThrough = _version;
                    }

                    // Still under the reporting lock: no report of a kept version slips between the reset and the ack.
                    _book.RecordRollback(decision.WorldLine, cut, restored);
                    _session.EnqueueAcknowledgement(decision.WorldLine, keptThrough);
                    Volatile.Write(ref _worldLine, decision.WorldLine);
                }
                catch (Exception ex) when (Volatile.Read(ref _fault) is null)
                {
                    var fault = new DseFaultedException($"StateObject {Id} could not apply the rollback of world-line {decision.WorldLine}; restart it.", ex);
                    SetFault(fault);
                    throw fault;
                }
                finally
                {
                    _gate.Open();
                }
            }
            finally
            {
                _session.ExitReporting();
            }
        }
        finally
        {
            _writer.Release();
        }

        // Waiters on this object's versions (non-speculative commits) must re-check now that the outcome is recorded:
        // the view was published before the decision was applied, so no later epoch may come to wake them.
        _view.Pulse();

        if (restored)
        {
            DseTelemetry.RecordRollback(lost);

            DseLogMessages.RolledBack(_logger, Id, keptThrough, decision.WorldLine);
        }
        else
        {
            DseTelemetry.RollbacksSkipped.Add(1);
            DseLogMessages.RollbackSkipped(_logger, Id, decision.WorldLine);
        }

        return true;
    }

    /// <summary>
    /// Whether own version <paramref name="version"/> survived the decision of <paramref name="worldLine"/> as this object
    /// applied it: kept outright, or within the version it restored. Null if this instance did not apply that decision.
    /// </summary>
    internal bool? SurvivedOwnRollback(long worldLine, long version) => _book.SurvivedOwnRollback(worldLine, version);

    /// <summary>
    /// The paper's optimization: state above the cut may stay when nothing in it (persisted or in memory) depends on a
    /// version the decision does not keep. Called with the gate closed.
    /// </summary>
    private bool CanKeep(RollbackDecision decision, long cut) =>
        _book.AboveCutSurvives(decision, cut) && Array.TrueForAll(_deps.ToArray(), decision.Survives);

    /// <summary>
    /// Prunes storage below <paramref name="committed"/>, which the boundary passed in this object's world-line, and
    /// records the commit lag of the versions it reached.
    /// </summary>
    internal async ValueTask PruneToAsync(long committed, CancellationToken cancellationToken)
    {
        // Read before waiting for the writer: the lag ends when the boundary was learned, not when an advance let go.
        long? learned = _commitLag.LearnedTimestamp();
        await _writer.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (committed <= _pruned || Volatile.Read(ref _fault) is not null)
            {
                return;
            }

            _book.DiscardThrough(committed);
            _commitLag.OnCommitted(committed, learned);

            // The committed version itself stays: it is the point any future rollback restores at the earliest.
            if (committed > 1)
            {
                Prune(committed - 1);
            }

            Volatile.Write(ref _pruned, committed);
        }
        finally
        {
            _writer.Release();
        }
    }

    /// <summary>
    /// Persists up to <paramref name="wanted"/>, which another participant's reported version depends on
    /// (<see cref="ClusterState.Wanted"/>), unless a persisted version already covers it or the periodic advance will.
    /// </summary>
    internal ValueTask PersistThroughAsync(long wanted, CancellationToken cancellationToken) =>
        AdvanceCoreAsync(wanted, AdvanceReason.Wanted, cancellationToken);

    /// <summary>Under _writer: nothing persisted covers <paramref name="wanted"/>, no periodic advance will, and it is plausible.</summary>
    private bool IsWantedNow(long wanted) =>
        wanted > _persistedThrough && !(_version >= wanted && Volatile.Read(ref _dirty) != 0) && HeaderRules.IsWithinLead(wanted, ClusterView, _options.MaxVersionLead);
}
