using Microsoft.Extensions.Logging;

namespace Dse;

/// <summary>
/// A connected <see cref="StateObject"/>'s side of the protocol with the coordinator: it reports durable versions in
/// version order, delivers rollback acknowledgements before them, hands a restarted coordinator its durable fragments
/// (resync), sends heartbeats, follows the coordinator's state (decisions in world-line order, the boundary, pruning),
/// and runs the background loops that do all of this on their own. <see cref="CoordinatorOutage"/> paces the calls
/// while the coordinator does not answer.
/// </summary>
/// <remarks>
/// Lock order of the owner: writer, then the reporting lock held here, then the action gate. Reports and
/// acknowledgements go out under the reporting lock; the owner applies a decision under it too, so that no report of a
/// kept version slips between the rollback and its acknowledgement.
/// </remarks>
internal sealed class CoordinatorSession
{
    private readonly StateObject _owner;
    private readonly VersionBook _book;
    private readonly DseOptions _options;
    private readonly ILogger _logger;
    private readonly CoordinatorOutage _outage;

    // Serializes reports so the coordinator sees versions in order.
    private readonly SemaphoreSlim _reporting = new(1, 1);

    // Rollback acknowledgements not yet delivered, in world-line order; sent before any report. Guarded by _reporting.
    private readonly Queue<(long WorldLine, long KeptThrough)> _pendingAcks = new();

    // The coordinator incarnation the owner last handed its durable fragments to (at connect or by a resync). Written
    // at connect and under _reporting after it.
    private long _syncedIncarnation;
    private long _lastHeartbeatTimestamp;
    private CancellationTokenSource? _stop;
    private Task? _background;

    public CoordinatorSession(StateObject owner, VersionBook book, ILogger logger)
    {
        _owner = owner;
        _book = book;
        _options = owner.Options;
        _logger = logger;
        _outage = new CoordinatorOutage(owner.Id, owner.Options, logger);
    }

    /// <summary>The connect succeeded: the coordinator holds every stored fragment of incarnation <paramref name="incarnation"/>.</summary>
    public void OnConnected(long incarnation, long timestamp)
    {
        _syncedIncarnation = incarnation;
        _lastHeartbeatTimestamp = timestamp;
    }

    /// <summary>Starts the loops that advance, report, heartbeat and follow the coordinator (<see cref="DseOptions.RunBackgroundTasks"/>).</summary>
    public void StartBackground()
    {
        var stop = new CancellationTokenSource();
        var token = stop.Token;
        _background = Task.WhenAll(Task.Run(() => AdvanceLoopAsync(token), CancellationToken.None), Task.Run(() => FollowLoopAsync(token), CancellationToken.None));
        _stop = stop;
    }

    /// <summary>Stops the background loops and waits for them to end.</summary>
    public async ValueTask StopAsync()
    {
        var stop = Interlocked.Exchange(ref _stop, null);
        if (stop is null)
        {
            return;
        }

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

    /// <summary>Takes the reporting lock, for the owner to apply a decision under it.</summary>
    public Task EnterReportingAsync(CancellationToken cancellationToken) => _reporting.WaitAsync(cancellationToken);

    /// <summary>Releases the reporting lock.</summary>
    public void ExitReporting() => _reporting.Release();

    /// <summary>Queues the acknowledgement of an applied decision; it goes out before any later report. Under the reporting lock.</summary>
    public void EnqueueAcknowledgement(long worldLine, long keptThrough) => _pendingAcks.Enqueue((worldLine, keptThrough));

    /// <summary>A version became durable: reports it now, unless an outage's backoff makes the background loop retry later.</summary>
    public void OnDurable()
    {
        // During a coordinator outage the background loop retries on its backoff; one call per persist would only spin.
        if (_options.RunBackgroundTasks && _outage.InBackoff())
        {
            return;
        }

        var flush = FlushReportsAsync(CancellationToken.None);
        if (!flush.IsCompletedSuccessfully)
        {
            _ = ObserveAsync(flush);
        }
    }

    /// <summary>Reports durable versions to the coordinator in version order; stops at the first one not yet durable.</summary>
    public async ValueTask FlushReportsAsync(CancellationToken cancellationToken)
    {
        var coordinator = _owner.ConnectedCoordinator;
        if (coordinator is null || _owner.Fault is not null)
        {
            return;
        }

        await _reporting.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            // The coordinator must learn what each rollback kept, in order, before it sees reports of the kept versions.
            while (_pendingAcks.TryPeek(out var ack))
            {
                await coordinator.AcknowledgeRollbackAsync(_owner.Id, ack.WorldLine, ack.KeptThrough, cancellationToken).ConfigureAwait(false);
                _pendingAcks.Dequeue();
            }

            // A restarted coordinator knows none of our fragments: hand it every durable one before reporting more.
            if (_owner.ClusterView.Incarnation > _syncedIncarnation)
            {
                await ResyncAsync(coordinator, cancellationToken).ConfigureAwait(false);
            }

            while (_book.NextToReport() is { } next)
            {
                ReportOutcome outcome;
                try
                {
                    outcome = await coordinator.ReportPersistedAsync(_owner.Id, new VersionReport(next.Version, next.WorldLine, next.Dependencies), cancellationToken).ConfigureAwait(false);
                }
                catch (DseCoordinatorException ex) when (ex.Code == CoordinatorErrorCode.ResyncRequired)
                {
                    // The coordinator restarted before we saw its new state: learn it, then resync (which covers this version).
                    _owner.PublishView(await coordinator.GetStateAsync(cancellationToken).ConfigureAwait(false));
                    await ResyncAsync(coordinator, cancellationToken).ConfigureAwait(false);
                    continue;
                }
                catch (DseCoordinatorException ex) when (ex.Code == CoordinatorErrorCode.CredentialRefused)
                {
                    // Not an outage either: the same credential is refused the same way until an operator fixes it.
                    _owner.SetFault(new DseFaultedException($"StateObject {_owner.Id}: {ex.Message}", ex));
                    return;
                }
                catch (DseCoordinatorException ex) when (ex.Code == CoordinatorErrorCode.InvalidRequest)
                {
                    // Not an outage: no retry will ever be accepted, and versions commit in order, so nothing after this one
                    // could commit either. A restart treats the version as lost (VersionMetadata.DecodeListing).
                    _owner.SetFault(new DseFaultedException(
                        $"StateObject {_owner.Id}: the coordinator refused the report of version {next.Version} ({ex.Message}); restart it on the same storage, which discards that version and the ones after it as a crash would.",
                        ex));
                    return;
                }

                DseLogMessages.ReportOutcome(_logger, _owner.Id, next.Version, outcome);
                _book.MarkReported(next);
            }
        }
        finally
        {
            _reporting.Release();
        }
    }

    /// <summary>
    /// Tells the coordinator the owner is alive, with its statistics, at most once per <see cref="DseOptions.HeartbeatPeriod"/>.
    /// </summary>
    public async ValueTask HeartbeatIfDueAsync(CancellationToken cancellationToken)
    {
        var coordinator = _owner.ConnectedCoordinator;
        if (coordinator is null || _options.TimeProvider.GetElapsedTime(Volatile.Read(ref _lastHeartbeatTimestamp)) < _options.HeartbeatPeriod)
        {
            return;
        }

        Volatile.Write(ref _lastHeartbeatTimestamp, _options.TimeProvider.GetTimestamp());
        await coordinator.HeartbeatAsync(_owner.Id, _owner.ReadStatistics(), cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Applies a cluster state: publishes it as the view, applies pending decisions in world-line order, prunes.</summary>
    /// <remarks>
    /// The view may run ahead of the owner's world-line while decisions are applied: sthreads catch up through the
    /// view's decisions on their own, and the action path only trusts the view's committed map in its own world-line.
    /// </remarks>
    public async ValueTask ApplyClusterStateAsync(ClusterState state, CancellationToken cancellationToken)
    {
        _owner.PublishView(state);

        long expected = _owner.WorldLine + 1;
        foreach (var decision in state.Decisions)
        {
            if (decision.WorldLine < expected)
            {
                continue;
            }

            if (decision.WorldLine > expected)
            {
                break;
            }

            if (await _owner.ApplyDecisionAsync(decision, cancellationToken).ConfigureAwait(false))
            {
                // Delivers the acknowledgement, then the kept versions; a coordinator outage is retried on the next flush.
                try
                {
                    await FlushReportsAsync(cancellationToken).ConfigureAwait(false);
                }
                catch (Exception ex) when (ex is not OperationCanceledException && _owner.Fault is null)
                {
                    _outage.RecordFailure(ex);
                }
            }

            expected = _owner.WorldLine + 1;
        }

        if (state.WorldLine >= expected)
        {
            // Recovery sequencing: a decision we never saw cannot be skipped.
            _owner.SetFault(new DseFaultedException($"StateObject {_owner.Id} missed the rollback decision of world-line {expected} (the coordinator no longer retains it); restart it."));
            _owner.ThrowIfNotReady();
        }

        long committed = state.CommittedVersion(_owner.Id);
        if (committed > _owner.PrunedVersion && state.WorldLine == _owner.WorldLine)
        {
            await _owner.PruneToAsync(committed, cancellationToken).ConfigureAwait(false);
        }

        if (state.Incarnation > Volatile.Read(ref _syncedIncarnation))
        {
            // A restarted coordinator waits for our answer: resync now rather than at the next report.
            await FlushReportsAsync(cancellationToken).ConfigureAwait(false);
        }

        // Another participant's version depends on a number of ours nothing persisted covers: persist up to it.
        if (state.Wanted.TryGetValue(_owner.Id, out long wanted) && state.WorldLine == _owner.WorldLine)
        {
            await _owner.PersistThroughAsync(wanted, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Hands a restarted coordinator the owner's world-line, its durable uncommitted fragments and its view of the
    /// boundary (docs/coordinator.md). Under _reporting, after pending acknowledgements.
    /// </summary>
    private async ValueTask ResyncAsync(IDseCoordinator coordinator, CancellationToken cancellationToken)
    {
        var view = _owner.ClusterView;
        var durable = _book.Durable();

        // Decisions are applied under _reporting too, so the world-line and the records are consistent with each other.
        var request = new ResyncRequest(_owner.Id, _owner.WorldLine, [.. durable.Select(r => new VersionReport(r.Version, r.WorldLine, r.Dependencies))], view.Committed);
        var state = await coordinator.ResyncAsync(request, cancellationToken).ConfigureAwait(false);
        _book.MarkReported(durable);
        Volatile.Write(ref _syncedIncarnation, Math.Max(view.Incarnation, state.Incarnation));
        _owner.PublishView(state);
        DseLogMessages.Resynced(_logger, _owner.Id, state.Incarnation, durable.Count);
    }

    private async Task ObserveAsync(ValueTask task)
    {
        try
        {
            await task.ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            _outage.RecordFailure(ex);
        }
    }

    private async Task AdvanceLoopAsync(CancellationToken cancellationToken)
    {
        using var timer = new PeriodicTimer(_options.GroupCommitPeriod, _options.TimeProvider);
        while (await timer.WaitForNextTickAsync(cancellationToken).ConfigureAwait(false))
        {
            if (_owner.Fault is not null)
            {
                return;
            }

            try
            {
                // Persisting goes on during a coordinator outage (speculation needs no coordinator); the calls back off.
                await _owner.AdvancePeriodicAsync(cancellationToken).ConfigureAwait(false);
                if (!_outage.InBackoff())
                {
                    // The heartbeat first: whether the owner is alive must not depend on its reports being accepted.
                    await HeartbeatIfDueAsync(cancellationToken).ConfigureAwait(false);
                    await FlushReportsAsync(cancellationToken).ConfigureAwait(false);
                    _outage.NoteReachable();
                }
            }
            catch (Exception ex) when (IsOutage(ex, cancellationToken) && _owner.Fault is null)
            {
                _outage.RecordFailure(ex);
            }
            catch (Exception ex) when (IsOutage(ex, cancellationToken))
            {
                return;
            }
        }
    }

    private async Task FollowLoopAsync(CancellationToken cancellationToken)
    {
        while (!cancellationToken.IsCancellationRequested && _owner.Fault is null)
        {
            try
            {
                var state = await _owner.ConnectedCoordinator!.WaitForChangeAsync(_owner.ClusterView.Epoch, cancellationToken).ConfigureAwait(false);
                _outage.NoteReachable();
                await ApplyClusterStateAsync(state, cancellationToken).ConfigureAwait(false);
            }
            catch (Exception ex) when (IsOutage(ex, cancellationToken) && _owner.Fault is null)
            {
                var delay = _outage.RecordFailure(ex);
                await Task.Delay(delay, _options.TimeProvider, cancellationToken).ConfigureAwait(false);
            }
            catch (Exception ex) when (IsOutage(ex, cancellationToken))
            {
                return;
            }
        }
    }

    /// <summary>
    /// Whether a background loop should treat <paramref name="exception"/> as a failed attempt rather than its own stop:
    /// anything but a cancellation of <paramref name="cancellationToken"/> (a timed-out call may surface as a
    /// cancellation too).
    /// </summary>
    private static bool IsOutage(Exception exception, CancellationToken cancellationToken) =>
        exception is not OperationCanceledException || !cancellationToken.IsCancellationRequested;
}
