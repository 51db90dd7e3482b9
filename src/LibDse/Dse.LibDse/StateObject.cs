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
public abstract partial class StateObject : IAsyncDisposable
{
    private readonly DseOptions _options;
    private readonly ILogger _logger;
    private readonly ActionGate _gate = new();

    // The single writer of the gate: version advances, rollbacks, prunes. Held while the gate is closed.
    private readonly SemaphoreSlim _writer = new(1, 1);

    // Serializes reports so the coordinator sees versions in order.
    private readonly SemaphoreSlim _reporting = new(1, 1);

    // Guards _records and _rollbacks. Taken on the action path only for a message from a lower world-line.
    private readonly Lock _book = new();

    // Versions handed to Persist and not yet committed, ascending. Guarded by _book.
    private readonly List<VersionRecord> _records = [];

    // What each applied decision did to this object: the world-line and the version restored (long.MaxValue: kept).
    // Guarded by _book; lets a waiter tell whether its version survived.
    private readonly List<(long WorldLine, long RestoredTo)> _rollbacks = [];

    // Rollback acknowledgements not yet delivered, in world-line order; sent before any report. Guarded by _reporting.
    private readonly Queue<(long WorldLine, long KeptThrough)> _pendingAcks = new();

    // Written only by the writer while the gate is closed; read inside actions, where they cannot change.
    private long _version;
    private long _worldLine;
    private DependencySet _deps = new();
    private int _dirty;

    // Replaced only by PublishView (compare-and-swap on the epoch), so it never goes back.
    private ClusterState _view = ClusterState.Empty;
    private TaskCompletionSource _viewChanged = NewSignal();
    private IDseCoordinator? _coordinator;
    private Exception? _fault;
    private long _lastAdvanceTimestamp;
    private long _lastHeartbeatTimestamp;
    private long _lastUnavailableLog;
    private long _outageRetryAt;
    private int _outageFailures;
    private static readonly TimeSpan UnavailableLogInterval = TimeSpan.FromSeconds(5);
    private static readonly TimeSpan MaxOutageBackoff = TimeSpan.FromSeconds(1);

    // The coordinator incarnation this object last handed its durable fragments to (at connect or by a resync).
    // Guarded by _reporting after connect.
    private long _syncedIncarnation;
    private long _pruned;
    private CancellationTokenSource? _stop;
    private Task? _background;

    /// <summary>Creates the StateObject; call <see cref="ConnectAsync"/> before anything else.</summary>
    /// <exception cref="ArgumentException">The options are invalid; the message names the option.</exception>
    protected StateObject(DseOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        _options = options;
        _logger = options.LoggerFactory?.CreateLogger(GetType()) ?? NullLogger.Instance;
    }

    /// <summary>The predetermined id.</summary>
    public long Id => _options.ObjectId;

    /// <summary>The runtime's logger, for subclasses.</summary>
    protected ILogger Logger => _logger;

    /// <summary>The options the StateObject runs with.</summary>
    public DseOptions Options => _options;

    /// <summary>The current, in-memory version: what actions running now belong to.</summary>
    public long CurrentVersion => Volatile.Read(ref _version);

    /// <summary>The world-line this StateObject is in.</summary>
    public long WorldLine => Volatile.Read(ref _worldLine);

    /// <summary>The highest own version inside the recoverable boundary, as last heard from the coordinator.</summary>
    public long CommittedVersion => ClusterView.CommittedVersion(Id);

    /// <summary>The cluster state as last heard from the coordinator.</summary>
    public ClusterState ClusterView => Volatile.Read(ref _view);

    /// <summary>Whether <see cref="ConnectAsync"/> has completed.</summary>
    public bool IsConnected => _coordinator is not null;

    /// <summary>The error that faulted this StateObject, if any.</summary>
    public Exception? Fault => Volatile.Read(ref _fault);

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

        long worldLine = _worldLine;
        if (senderWorldLine != worldLine)
        {
            // Recovery partition. A message from a lower world-line is discarded unless everything it carries provably
            // survived every decision since: then it is surviving state, merely sent before its sender caught up.
            if (senderWorldLine > worldLine || !ClusterView.Survived(dependencies, senderWorldLine, worldLine, this))
            {
                _gate.Exit();
                if (senderWorldLine < worldLine)
                {
                    DseTelemetry.MessagesDiscarded.Add(1);
                    return StartActionStatus.Discard;
                }

                return StartActionStatus.WorldLineBehind;
            }
        }

        long version = _version;
        for (int i = 0; i < dependencies.Length; i++)
        {
            if (dependencies[i].Version > version)
            {
                _gate.Exit();
                return StartActionStatus.VersionBehind;
            }
        }

        // A committed version needs no edge, but only the view of our own world-line can say so: a newer view's
        // committed map belongs to a lineage that may reuse version numbers of lost state.
        var view = Volatile.Read(ref _view);
        bool sameLineage = view.WorldLine == worldLine;
        var deps = _deps;
        for (int i = 0; i < dependencies.Length; i++)
        {
            var d = dependencies[i];
            if (d.ObjectId != Id && !(sameLineage && d.Version <= view.CommittedVersion(d.ObjectId)))
            {
                deps.Add(d.ObjectId, d.Version);
            }
        }

        return StartActionStatus.Accepted;
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
            _ => StartActionSlowAsync(header, status, cancellationToken),
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
        TryStartLocalAction() ? ValueTask.CompletedTask : StartLocalSlowAsync(cancellationToken);

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
        return _options.Speculative ? new ValueTask<DseHeader>(header) : CommitThenReturnAsync(header, cancellationToken);
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
        return _options.Speculative ? new ValueTask<Sthread>(sthread) : CommitThenReturnAsync(sthread, version, worldLine, cancellationToken);
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
            _ => StartActionSlowAsync(sthread.CurrentHeader(), status, cancellationToken),
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
            var signal = Volatile.Read(ref _viewChanged);
            return Volatile.Read(ref _fault) is not null ? Task.CompletedTask : signal.Task;
        }
    }

    /// <summary>Completes when the cluster view changes after <paramref name="knownEpoch"/> (or at once if it already has).</summary>
    public Task WaitForViewChangeAsync(long knownEpoch, CancellationToken cancellationToken = default)
    {
        var signal = Volatile.Read(ref _viewChanged);

        // Checked after reading the signal: a fault set meanwhile completed this signal or a later one is not needed.
        return ClusterView.Epoch > knownEpoch || Volatile.Read(ref _fault) is not null ? Task.CompletedTask : signal.Task.WaitAsync(cancellationToken);
    }

    /// <summary>
    /// Waits until own version <paramref name="version"/>, produced in <paramref name="worldLine"/>, is inside the
    /// recoverable boundary.
    /// </summary>
    /// <exception cref="DseRolledBackException">The version was rolled back before it became recoverable.</exception>
    /// <exception cref="DseFaultedException">The StateObject faulted or was disposed while waiting.</exception>
    public async ValueTask WaitForCommitAsync(long version, long worldLine, CancellationToken cancellationToken = default)
    {
        while (true)
        {
            var next = NextChange;
            ThrowIfFaulted();
            var view = ClusterView;

            // Rollbacks first: a rolled-back number may be committed again by the new lineage.
            lock (_book)
            {
                foreach (var (decided, restoredTo) in _rollbacks)
                {
                    if (decided > worldLine && restoredTo < version)
                    {
                        throw new DseRolledBackException(decided, new Dependency(Id, version));
                    }
                }
            }

            if (view.CommittedVersion(Id) >= version)
            {
                return;
            }

            await next.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Stops the background tasks. Outstanding persists are not waited for; the StateObject cannot be used afterwards.</summary>
    public async ValueTask DisposeAsync()
    {
        await DisposeAsyncCore().ConfigureAwait(false);
        GC.SuppressFinalize(this);
    }

    /// <summary>Stops the background tasks; subclasses release their storage after calling this.</summary>
    protected virtual async ValueTask DisposeAsyncCore()
    {
        var stop = Interlocked.Exchange(ref _stop, null);
        if (stop is not null)
        {
            await stop.CancelAsync().ConfigureAwait(false);
            try
            {
                if (_background is not null)
                {
                    await _background.ConfigureAwait(false);
                }
            }
            catch (OperationCanceledException)
            {
                // Expected: the loops end by cancellation.
            }

            stop.Dispose();
        }

        Interlocked.CompareExchange(ref _fault, new ObjectDisposedException(GetType().Name, "The StateObject was disposed."), null);
        Volatile.Read(ref _viewChanged).TrySetResult();
    }

    internal void SetFault(Exception error)
    {
        if (Interlocked.CompareExchange(ref _fault, error, null) is null)
        {
            DseLogMessages.Faulted(_logger, Id, error);
            Volatile.Read(ref _viewChanged).TrySetResult();
        }
    }

    private static TaskCompletionSource NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    private void ThrowIfNotReady()
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

    private async ValueTask<bool> StartActionSlowAsync(DseHeader header, StartActionStatus status, CancellationToken cancellationToken)
    {
        while (true)
        {
            // Accepted means we are inside the gate: return before anything can throw, or the action leaks.
            switch (status)
            {
                case StartActionStatus.Accepted:
                    return true;
                case StartActionStatus.Discard:
                    return false;
                case StartActionStatus.Blocked:
                    await _gate.WaitOpenAsync().WaitAsync(cancellationToken).ConfigureAwait(false);
                    break;
                case StartActionStatus.VersionBehind:
                    await AdvanceVersionToAsync(MaxVersion(header), cancellationToken).ConfigureAwait(false);
                    break;
                case StartActionStatus.WorldLineBehind:
                    await RefreshAsync(cancellationToken).ConfigureAwait(false);
                    var next = NextChange;
                    if (WorldLine < header.WorldLine)
                    {
                        await next.WaitAsync(cancellationToken).ConfigureAwait(false);
                    }

                    break;
            }

            status = TryStartAction(header);
        }
    }

    private async ValueTask StartLocalSlowAsync(CancellationToken cancellationToken)
    {
        do
        {
            await _gate.WaitOpenAsync().WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        while (!TryStartLocalAction());
    }

    private static long MaxVersion(in DseHeader header)
    {
        long max = 0;
        for (int i = 0; i < header.DependencyCount; i++)
        {
            max = Math.Max(max, header.GetDependency(i).Version);
        }

        return max;
    }

    private async ValueTask<DseHeader> CommitThenReturnAsync(DseHeader header, CancellationToken cancellationToken)
    {
        await PersistAndWaitForCommitAsync(header.Origin.Version, header.WorldLine, cancellationToken).ConfigureAwait(false);
        return header;
    }

    private async ValueTask<Sthread> CommitThenReturnAsync(Sthread sthread, long version, long worldLine, CancellationToken cancellationToken)
    {
        await PersistAndWaitForCommitAsync(version, worldLine, cancellationToken).ConfigureAwait(false);
        return sthread;
    }

    private async ValueTask PersistAndWaitForCommitAsync(long version, long worldLine, CancellationToken cancellationToken)
    {
        await AdvanceVersionToAsync(version + 1, cancellationToken).ConfigureAwait(false);
        await WaitForCommitAsync(version, worldLine, cancellationToken).ConfigureAwait(false);
    }

    private async ValueTask AdvanceCoreAsync(long target, AdvanceReason reason, CancellationToken cancellationToken)
    {
        await _writer.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfNotReady();
            if ((reason == AdvanceReason.CommitOrdering && _version >= target) || (reason == AdvanceReason.Periodic && Volatile.Read(ref _dirty) == 0))
            {
                return;
            }

            await CloseGateAsync().ConfigureAwait(false);
            try
            {
                AdvanceUnderGate(target);
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
        lock (_book)
        {
            _records.Add(record);
        }

        Volatile.Write(ref _version, Math.Max(version + 1, target));
        _deps = new DependencySet();
        Volatile.Write(ref _dirty, 0);
        _lastAdvanceTimestamp = _options.TimeProvider.GetTimestamp();
        DseTelemetry.VersionsPersisted.Add(1);
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
        lock (_book)
        {
            record.Durable = true;
        }

        // During a coordinator outage the background loop retries on its backoff; one call per persist would only spin.
        if (_options.RunBackgroundTasks && InOutageBackoff())
        {
            return;
        }

        var flush = FlushReportsAsync(CancellationToken.None);
        if (!flush.IsCompletedSuccessfully)
        {
            _ = ObserveAsync(flush);
        }
    }

    /// <summary>Whether a coordinator outage was seen and its backoff has not passed yet (background retries wait).</summary>
    private bool InOutageBackoff()
    {
        long retryAt = Volatile.Read(ref _outageRetryAt);
        return retryAt != 0 && _options.TimeProvider.GetTimestamp() < retryAt;
    }

    /// <summary>The coordinator answered: background calls go back to their normal pace.</summary>
    private void NoteCoordinatorReachable()
    {
        if (Volatile.Read(ref _outageRetryAt) != 0)
        {
            Volatile.Write(ref _outageFailures, 0);
            Volatile.Write(ref _outageRetryAt, 0);
        }
    }

    /// <summary>
    /// Records a failed coordinator call: background retries back off from the group-commit period, doubling up to
    /// 1 s. Logs the outage as a warning at most every 5 s; the repeats in between go to debug.
    /// </summary>
    private TimeSpan LogCoordinatorUnavailable(Exception exception)
    {
        var time = _options.TimeProvider;
        int failures = Math.Min(Interlocked.Increment(ref _outageFailures), 16);
        var delay = TimeSpan.FromTicks(Math.Min(_options.GroupCommitPeriod.Ticks << Math.Min(failures - 1, 10), MaxOutageBackoff.Ticks));
        Volatile.Write(ref _outageRetryAt, time.GetTimestamp() + Math.Max(1, (long)(delay.TotalSeconds * time.TimestampFrequency)));
        LogOutage(exception);
        return delay;
    }

    private void LogOutage(Exception exception)
    {
        var time = _options.TimeProvider;
        long now = time.GetTimestamp();
        long last = Volatile.Read(ref _lastUnavailableLog);
        if (last != 0 && time.GetElapsedTime(last, now) < UnavailableLogInterval)
        {
            DseLogMessages.CoordinatorStillUnavailable(_logger, Id, exception.Message);
            return;
        }

        if (Interlocked.CompareExchange(ref _lastUnavailableLog, now, last) == last)
        {
            DseLogMessages.CoordinatorUnavailable(_logger, Id, exception);
        }
    }

    private async Task ObserveAsync(ValueTask task)
    {
        try
        {
            await task.ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            LogCoordinatorUnavailable(ex);
        }
    }

    /// <summary>Reports durable versions to the coordinator in version order; stops at the first one not yet durable.</summary>
    private async ValueTask FlushReportsAsync(CancellationToken cancellationToken)
    {
        var coordinator = _coordinator;
        if (coordinator is null || Volatile.Read(ref _fault) is not null)
        {
            return;
        }

        await _reporting.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            // The coordinator must learn what each rollback kept, in order, before it sees reports of the kept versions.
            while (_pendingAcks.TryPeek(out var ack))
            {
                await coordinator.AcknowledgeRollbackAsync(Id, ack.WorldLine, ack.KeptThrough, cancellationToken).ConfigureAwait(false);
                _pendingAcks.Dequeue();
            }

            // A restarted coordinator knows none of our fragments: hand it every durable one before reporting more.
            if (ClusterView.Incarnation > _syncedIncarnation)
            {
                await ResyncCoreAsync(coordinator, cancellationToken).ConfigureAwait(false);
            }

            while (true)
            {
                VersionRecord? next = null;
                lock (_book)
                {
                    foreach (var r in _records)
                    {
                        if (!r.Reported)
                        {
                            next = r.Durable ? r : null;
                            break;
                        }
                    }
                }

                if (next is null)
                {
                    return;
                }

                ReportOutcome outcome;
                try
                {
                    outcome = await coordinator.ReportPersistedAsync(Id, new VersionReport(next.Version, next.WorldLine, next.Dependencies), cancellationToken).ConfigureAwait(false);
                }
                catch (DseCoordinatorException ex) when (ex.Code == CoordinatorErrorCode.ResyncRequired)
                {
                    // The coordinator restarted before we saw its new state: learn it, then resync (which covers this version).
                    PublishView(await coordinator.GetStateAsync(cancellationToken).ConfigureAwait(false));
                    await ResyncCoreAsync(coordinator, cancellationToken).ConfigureAwait(false);
                    continue;
                }

                DseLogMessages.ReportOutcome(_logger, Id, next.Version, outcome);
                lock (_book)
                {
                    next.Reported = true;
                }
            }
        }
        finally
        {
            _reporting.Release();
        }
    }

    /// <summary>
    /// Hands a restarted coordinator this object's world-line, its durable uncommitted fragments and its view of the
    /// boundary (docs/coordinator.md). Under _reporting, after pending acknowledgements.
    /// </summary>
    private async ValueTask ResyncCoreAsync(IDseCoordinator coordinator, CancellationToken cancellationToken)
    {
        var view = ClusterView;
        List<VersionRecord> durable;
        lock (_book)
        {
            durable = [.. _records.Where(r => r.Durable)];
        }

        // Decisions are applied under _reporting too, so the world-line and the records are consistent with each other.
        var request = new ResyncRequest(Id, WorldLine, [.. durable.Select(r => new VersionReport(r.Version, r.WorldLine, r.Dependencies))], view.Committed);
        var state = await coordinator.ResyncAsync(request, cancellationToken).ConfigureAwait(false);
        lock (_book)
        {
            foreach (var r in durable)
            {
                r.Reported = true;
            }
        }

        Volatile.Write(ref _syncedIncarnation, Math.Max(view.Incarnation, state.Incarnation));
        PublishView(state);
        DseLogMessages.Resynced(_logger, Id, state.Incarnation, durable.Count);
    }

    private enum AdvanceReason
    {
        Explicit,
        Periodic,
        CommitOrdering,
    }

    /// <summary>A version handed to Persist and not yet committed. Mutable fields are guarded by the owner's book lock.</summary>
    internal sealed class VersionRecord(long version, long worldLine, Dependency[] dependencies)
    {
        public long Version { get; } = version;

        public long WorldLine { get; } = worldLine;

        public Dependency[] Dependencies { get; } = dependencies;

        public bool Durable { get; set; }

        public bool Reported { get; set; }
    }
}
