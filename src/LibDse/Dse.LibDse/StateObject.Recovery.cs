namespace Dse;

/// <summary>Connecting, following the coordinator, applying rollback decisions and pruning.</summary>
public abstract partial class StateObject
{
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
            var reports = new List<VersionReport>(listed.Count);
            long highest = 0;
            foreach (var v in listed)
            {
                if (v.Version <= highest)
                {
                    throw new InvalidOperationException($"StateObject {Id}: ListVersions returned version {v.Version} after {highest}; versions must be positive and ascending.");
                }

                reports.Add(VersionMetadata.Decode(v.Version, v.Metadata.Span));
                highest = v.Version;
            }

            var response = await coordinator.ConnectAsync(new ConnectRequest(Id, reports), cancellationToken).ConfigureAwait(false);
            if (response.MustRetry)
            {
                return response.State;
            }

            await RestoreAsync(response.RestoreVersion, cancellationToken).ConfigureAwait(false);

            long committed = response.State.CommittedVersion(Id);
            lock (_book)
            {
                _records.Clear();
                foreach (var r in reports)
                {
                    if (r.Version > committed && r.Version <= response.RestoreVersion)
                    {
                        // The coordinator took these into its current lineage, whatever world-line they were persisted in
                        // (a fresh coordinator after a whole-cluster restart starts again at world-line 0).
                        _records.Add(new VersionRecord(r.Version, Math.Min(r.WorldLine, response.WorldLine), [.. r.Dependencies]) { Durable = true, Reported = true });
                    }
                }
            }

            // Numbers above the surviving storage may have been used in memory before a crash; reusing them is safe
            // because the new world-line tells the two lineages apart (old headers are discarded, old sthreads die).
            _version = Math.Max(highest, response.RestoreVersion) + 1;
            _worldLine = response.WorldLine;
            _deps = new DependencySet();
            _pruned = committed;
            Volatile.Write(ref _view, response.State);
            _lastAdvanceTimestamp = _options.TimeProvider.GetTimestamp();
            _lastHeartbeatTimestamp = _lastAdvanceTimestamp;
            _syncedIncarnation = response.State.Incarnation;
            _coordinator = coordinator;
            DseLogMessages.Connected(_logger, Id, response.RestoreVersion, response.WorldLine, response.IsRestart);
        }
        finally
        {
            _writer.Release();
        }

        if (_options.RunBackgroundTasks)
        {
            var stop = new CancellationTokenSource();
            var token = stop.Token;
            _background = Task.WhenAll(Task.Run(() => AdvanceLoopAsync(token), CancellationToken.None), Task.Run(() => FollowLoopAsync(token), CancellationToken.None));
            _stop = stop;
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
        await ApplyClusterStateAsync(state, cancellationToken).ConfigureAwait(false);
        await FlushReportsAsync(cancellationToken).ConfigureAwait(false);
        if (_options.TimeProvider.GetElapsedTime(_lastAdvanceTimestamp) >= _options.GroupCommitPeriod)
        {
            await AdvanceCoreAsync(0, AdvanceReason.Periodic, cancellationToken).ConfigureAwait(false);
        }

        await HeartbeatIfDueAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Tells the coordinator this participant is alive, at most once per <see cref="DseOptions.HeartbeatPeriod"/>.</summary>
    private async ValueTask HeartbeatIfDueAsync(CancellationToken cancellationToken)
    {
        var coordinator = _coordinator;
        if (coordinator is null || _options.TimeProvider.GetElapsedTime(Volatile.Read(ref _lastHeartbeatTimestamp)) < _options.HeartbeatPeriod)
        {
            return;
        }

        Volatile.Write(ref _lastHeartbeatTimestamp, _options.TimeProvider.GetTimestamp());
        await coordinator.HeartbeatAsync(Id, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Applies a cluster state: publishes it as the view, applies pending decisions in world-line order, prunes.</summary>
    /// <remarks>
    /// The view may run ahead of the object's world-line while decisions are applied: sthreads catch up through the
    /// view's decisions on their own, and the action path only trusts the view's committed map in its own world-line.
    /// </remarks>
    internal async ValueTask ApplyClusterStateAsync(ClusterState state, CancellationToken cancellationToken)
    {
        PublishView(state);

        long expected = WorldLine + 1;
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

            await ApplyDecisionAsync(decision, cancellationToken).ConfigureAwait(false);
            expected = WorldLine + 1;
        }

        if (state.WorldLine >= expected)
        {
            // Recovery sequencing: a decision we never saw cannot be skipped.
            SetFault(new DseFaultedException($"StateObject {Id} missed the rollback decision of world-line {expected} (the coordinator no longer retains it); restart it."));
            ThrowIfNotReady();
        }

        long committed = state.CommittedVersion(Id);
        if (committed > Volatile.Read(ref _pruned) && state.WorldLine == WorldLine)
        {
            await PruneAsync(committed, cancellationToken).ConfigureAwait(false);
        }

        if (state.Incarnation > Volatile.Read(ref _syncedIncarnation))
        {
            // A restarted coordinator waits for our answer: resync now rather than at the next report.
            await FlushReportsAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Replaces the view if <paramref name="state"/> is newer; concurrent callers never move it back.</summary>
    internal void PublishView(ClusterState state)
    {
        while (true)
        {
            var current = Volatile.Read(ref _view);
            if (state.Epoch <= current.Epoch)
            {
                return;
            }

            // A restarted coordinator publishes only the floors it has heard of so far; what an earlier incarnation
            // published as committed stays committed, so the view keeps the higher of the two until recovery ended
            // (every state of a recovering incarnation, not only its first, or a resync could lose the floors).
            bool merge = current.Committed.Count > 0 && (state.Incarnation > current.Incarnation || (state.Incarnation == current.Incarnation && state.IsRecovering));
            var next = merge ? WithCommittedFloors(state, current.Committed) : state;
            if (Interlocked.CompareExchange(ref _view, next, current) == current)
            {
                Interlocked.Exchange(ref _viewChanged, NewSignal()).TrySetResult();
                return;
            }
        }
    }

    private static ClusterState WithCommittedFloors(ClusterState state, IReadOnlyDictionary<long, long> floors)
    {
        Dictionary<long, long>? merged = null;
        foreach (var (id, floor) in floors)
        {
            if (floor > state.CommittedVersion(id))
            {
                merged ??= new Dictionary<long, long>(state.Committed);
                merged[id] = floor;
            }
        }

        return merged is null ? state : state with { Committed = merged };
    }

    private async ValueTask ApplyDecisionAsync(RollbackDecision decision, CancellationToken cancellationToken)
    {
        long keptThrough;
        bool restored;
        await _writer.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfNotReady();
            if (decision.WorldLine <= _worldLine)
            {
                return;
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
            await _reporting.WaitAsync(cancellationToken).ConfigureAwait(false);
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
                        await RestoreAsync(cut, CancellationToken.None).ConfigureAwait(false);
                        lock (_book)
                        {
                            _records.RemoveAll(r => r.Version > cut);
                        }

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
                    lock (_book)
                    {
                        if (!restored)
                        {
                            // Versions above the cut were refused as stale while the decision was pending: report them again.
                            foreach (var r in _records)
                            {
                                if (r.Version > cut)
                                {
                                    r.Reported = false;
                                }
                            }
                        }

                        _rollbacks.Add((decision.WorldLine, restored ? cut : long.MaxValue));
                    }

                    _pendingAcks.Enqueue((decision.WorldLine, keptThrough));
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
                _reporting.Release();
            }
        }
        finally
        {
            _writer.Release();
        }

        // Waiters on this object's versions (non-speculative commits) must re-check now that the outcome is recorded:
        // the view was published before the decision was applied, so no later epoch may come to wake them.
        Interlocked.Exchange(ref _viewChanged, NewSignal()).TrySetResult();

        if (restored)
        {
            DseTelemetry.Rollbacks.Add(1);
            DseLogMessages.RolledBack(_logger, Id, keptThrough, decision.WorldLine);
        }
        else
        {
            DseTelemetry.RollbacksSkipped.Add(1);
            DseLogMessages.RollbackSkipped(_logger, Id, decision.WorldLine);
        }

        // Delivers the acknowledgement, then the kept versions; a coordinator outage is retried on the next flush.
        try
        {
            await FlushReportsAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is not OperationCanceledException && Volatile.Read(ref _fault) is null)
        {
            LogCoordinatorUnavailable(ex);
        }
    }

    /// <summary>
    /// Whether own version <paramref name="version"/> survived the decision of <paramref name="worldLine"/> as this object
    /// applied it: kept outright, or within the version it restored. Null if this instance did not apply that decision.
    /// </summary>
    internal bool? SurvivedOwnRollback(long worldLine, long version)
    {
        lock (_book)
        {
            foreach (var (decided, restoredTo) in _rollbacks)
            {
                if (decided == worldLine)
                {
                    return version <= restoredTo;
                }
            }
        }

        return null;
    }

    /// <summary>
    /// The paper's optimization: state above the cut may stay when nothing in it (persisted or in memory) depends on a
    /// version the decision does not keep. Called with the gate closed.
    /// </summary>
    private bool CanKeep(RollbackDecision decision, long cut)
    {
        lock (_book)
        {
            foreach (var r in _records)
            {
                if (r.Version <= cut)
                {
                    continue;
                }

                foreach (var d in r.Dependencies)
                {
                    if (!decision.Survives(d))
                    {
                        return false;
                    }
                }
            }
        }

        foreach (var d in _deps.ToArray())
        {
            if (!decision.Survives(d))
            {
                return false;
            }
        }

        return true;
    }

    private async ValueTask PruneAsync(long committed, CancellationToken cancellationToken)
    {
        await _writer.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (committed <= _pruned || Volatile.Read(ref _fault) is not null)
            {
                return;
            }

            lock (_book)
            {
                _records.RemoveAll(r => r.Version <= committed);
            }

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

    private async Task AdvanceLoopAsync(CancellationToken cancellationToken)
    {
        using var timer = new PeriodicTimer(_options.GroupCommitPeriod, _options.TimeProvider);
        while (await timer.WaitForNextTickAsync(cancellationToken).ConfigureAwait(false))
        {
            if (Volatile.Read(ref _fault) is not null)
            {
                return;
            }

            try
            {
                // Persisting goes on during a coordinator outage (speculation needs no coordinator); the calls back off.
                await AdvanceCoreAsync(0, AdvanceReason.Periodic, cancellationToken).ConfigureAwait(false);
                if (!InOutageBackoff())
                {
                    await FlushReportsAsync(cancellationToken).ConfigureAwait(false);
                    await HeartbeatIfDueAsync(cancellationToken).ConfigureAwait(false);
                    NoteCoordinatorReachable();
                }
            }
            catch (Exception ex) when (IsOutage(ex, cancellationToken) && Volatile.Read(ref _fault) is null)
            {
                LogCoordinatorUnavailable(ex);
            }
            catch (Exception ex) when (IsOutage(ex, cancellationToken))
            {
                return;
            }
        }
    }

    private async Task FollowLoopAsync(CancellationToken cancellationToken)
    {
        while (!cancellationToken.IsCancellationRequested && Volatile.Read(ref _fault) is null)
        {
            try
            {
                var state = await _coordinator!.WaitForChangeAsync(ClusterView.Epoch, cancellationToken).ConfigureAwait(false);
                NoteCoordinatorReachable();
                await ApplyClusterStateAsync(state, cancellationToken).ConfigureAwait(false);
            }
            catch (Exception ex) when (IsOutage(ex, cancellationToken) && Volatile.Read(ref _fault) is null)
            {
                var delay = LogCoordinatorUnavailable(ex);
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
