namespace Dse.Darq;

/// <summary>
/// General speculation through LibDse: the DARQ is a StateObject (<see cref="DarqStateObject"/>). Every mutation runs in
/// a LibDse action; a version's Persist is a DARQ commit whose cookie records the version; Restore voids the log after a
/// version with a ROLLBACK entry and rebuilds the state of that version; truncation stops at the completed prefix of the
/// oldest version that can still be restored.
/// </summary>
public sealed partial class Darq
{
    /// <summary>General speculation: log ranges [From, Until) voided by restores; under the gate.</summary>
    private readonly List<(long From, long Until)> _voided = [];

    /// <summary>General speculation: persisted, unpruned versions, ascending; under the gate.</summary>
    private readonly List<DarqVersionRecord> _versions = [];

    private DarqStateObject? _dse;

    /// <summary>Whether the recovered commit was written under general speculation (set by recovery).</summary>
    private bool _recoveredGeneral;

    /// <summary>General speculation: truncation never passes this (the completed prefix of the oldest restorable version); under the gate.</summary>
    private StepStart _truncationLimit;

    /// <summary>General speculation: every address below this belongs to a version the coordinator committed; under the gate.</summary>
    private long _prunedTail;

    /// <summary>
    /// The DARQ's LibDse StateObject when <see cref="DarqOptions.Speculation"/> is <see cref="DarqSpeculationMode.General"/>
    /// (its versions, world-line and committed version); <see langword="null"/> otherwise.
    /// </summary>
    public StateObject? DseStateObject => _dse;

    /// <summary>
    /// Receives an OUT message from another DARQ (see <see cref="ReceiveAsync"/>) and returns the header to acknowledge it
    /// with. General speculation: the receive runs in an action started with the delivery's <see cref="DarqDelivery.DseHeader"/>
    /// (commit ordering and world-line rules apply) and returns at once with the header of this DARQ's vertex, which the
    /// source consumes when it records the acknowledgement. Otherwise: waits until the message is durable here and returns
    /// an empty header.
    /// </summary>
    /// <param name="delivery">The message.</param>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <returns>The encoded DSE header of the acknowledgement (empty when this DARQ does not speculate generally).</returns>
    /// <exception cref="DarqMessageRefusedException">The message comes from a rolled-back world-line.</exception>
    /// <exception cref="DseHeaderFormatException">The delivery's header is malformed.</exception>
    public async ValueTask<ReadOnlyMemory<byte>> ReceiveSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken = default)
    {
        if (_dse is null)
        {
            await ReceiveDurablyAsync(delivery, cancellationToken).ConfigureAwait(false);
            return ReadOnlyMemory<byte>.Empty;
        }

        var (_, header) = await ReceiveInActionAsync(delivery, cancellationToken).ConfigureAwait(false);
        return header.ToArray();
    }

    /// <summary>
    /// Waits until what was appended at <paramref name="address"/> can never be lost: committed to the log, or (general
    /// speculation) inside a version the coordinator committed. The barrier for external consumers and for durable
    /// acknowledgements to non-speculative producers.
    /// </summary>
    /// <param name="address">
    /// An entry's address (a message's LSN), or the <c>DurableAt</c> of an enqueue or step result. General speculation:
    /// the entry at <paramref name="address"/>; when nothing has been appended there yet (the tail, as the
    /// <c>DurableAt</c> of the last entry is), the entry just before it. Pass <c>DurableAt - 1</c> to name exactly the
    /// entry of a result: a later entry at <c>DurableAt</c> may belong to a later version, or be rolled back alone.
    /// </param>
    /// <param name="cancellationToken">Cancels waiting.</param>
    /// <exception cref="DseRolledBackException">General speculation: the entry was rolled back.</exception>
    public async ValueTask WaitForRecoverableAsync(long address, CancellationToken cancellationToken = default)
    {
        var dse = _dse;
        if (dse is null)
        {
            await WaitForCommitAsync(address, cancellationToken).ConfigureAwait(false);
            return;
        }

        // A persisted version's record names the versions an entry may belong to. An entry in no record belongs to the
        // current version, but CurrentVersion is only stable inside an action: between LibDse's version bump and the
        // Persist that records the old version, it already names the next one (which an idle DARQ may never persist).
        var (version, worldLine) = await FindRecoverableVersionAsync(dse, address, inAction: false, cancellationToken).ConfigureAwait(false);
        if (version == NoVersion)
        {
            // A local action dirties the version: under backpressure it would make LibDse persist one more.
            await PaceAsync(dse, cancellationToken).ConfigureAwait(false);
            await dse.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                (version, worldLine) = await FindRecoverableVersionAsync(dse, address, inAction: true, cancellationToken).ConfigureAwait(false);
            }
            finally
            {
                dse.EndAction();
            }
        }

        if (version == Recoverable)
        {
            return;
        }

        await dse.WaitForCommitAsync(version, worldLine, cancellationToken).ConfigureAwait(false);
    }

    private const long NoVersion = -1;
    private const long Recoverable = -2;

    /// <summary>
    /// Under the gate: the version holding the entry at <paramref name="address"/> (<see cref="Recoverable"/> when it is
    /// committed already), or <see cref="NoVersion"/> when no persisted version holds it and the caller is not inside an
    /// action (where the current version is the answer).
    /// </summary>
    /// <exception cref="DseRolledBackException">The entry was rolled back.</exception>
    private async ValueTask<(long Version, long WorldLine)> FindRecoverableVersionAsync(StateObject dse, long address, bool inAction,
        CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();

            // The tail holds no entry yet: a version holding it may never be persisted (an idle StateObject does not
            // advance), so a DurableAt at the tail means the entry that ends there.
            if (address == _log.TailAddress && address > _log.BeginAddress)
            {
                address = _log.TailAddress - 1;
            }

            if (IsVoided(address))
            {
                throw new DseRolledBackException($"DARQ '{Name}': the entry at address {address} was rolled back.");
            }

            if (address < _prunedTail)
            {
                return (Recoverable, 0);
            }

            foreach (var record in _versions)
            {
                if (record.Tail > address)
                {
                    return (record.Version, dse.WorldLine);
                }
            }

            return (inAction ? dse.CurrentVersion : NoVersion, dse.WorldLine);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Opens the StateObject and connects it; the coordinator's answer may restore an earlier version.</summary>
    private async Task ConnectSpeculationAsync(CancellationToken cancellationToken)
    {
        // A log written in another mode has no version records: LibDse would restore it to version 0, which voids every
        // entry, acknowledged ones included. Such a log cannot be told from a General one by its contents, so the commit
        // says which mode wrote it.
        if (!_recoveredGeneral && _nextSequence > 0)
        {
            throw new InvalidOperationException(
                $"DARQ '{Name}' holds {_nextSequence} committed entries written without general speculation; opening it with " +
                "DarqSpeculationMode.General would roll every one of them back. Open it in the mode that wrote it " +
                "(Off or IntraParticipant), or start general speculation on empty storage.");
        }

        _truncationLimit = new StepStart(_log.BeginAddress, _beginSequence);
        var dse = new DarqStateObject(_options.Dse!, this);
        _dse = dse;
        try
        {
            await dse.ConnectAsync(_options.Coordinator!, cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            _dse = null;
            await dse.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Recovery: takes the speculation state of the recovered commit.</summary>
    private void RecoverSpeculation(DarqCommitState state)
    {
        _recoveredGeneral = state.General;
        _voided.AddRange(state.Voided);
        _versions.AddRange(state.Versions);
        RecountSpeculation(freed: false);
    }

    private bool IsVoided(long address)
    {
        foreach (var (from, until) in _voided)
        {
            if (address >= from && address < until)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>General speculation: truncation stops at the completed prefix of the oldest restorable version. Under the gate.</summary>
    private StepStart LimitTruncation(StepStart start) => _dse is not null && start.Lsn > _truncationLimit.Lsn ? _truncationLimit : start;

    /// <summary>General speculation: a producer's table entry changes; versions that can still be restored remember its old value. Under the gate.</summary>
    private void NoteProducerChange(long producerId, long oldValue)
    {
        int added = 0;
        foreach (var record in _versions)
        {
            if (record.Undo.TryAdd(producerId, oldValue))
            {
                added++;
            }
        }

        if (added > 0)
        {
            NoteUndoGrowth(added);
        }
    }

    /// <summary>
    /// Runs <paramref name="body"/> in a LibDse action consuming <paramref name="header"/>; returns its result and the
    /// action's header. Waits first while backpressure holds new actions (Darq.Pacing.cs); a body that finds no room for a
    /// producer change (before appending anything) ends the action, waits for room and starts over.
    /// </summary>
    private async ValueTask<(T Result, DseHeader Header)> InActionAsync<T>(DseHeader header, Func<CancellationToken, ValueTask<T>> body,
        CancellationToken cancellationToken)
    {
        var dse = _dse!;
        while (true)
        {
            await PaceAsync(dse, cancellationToken).ConfigureAwait(false);
            if (!await dse.StartActionAsync(header, cancellationToken).ConfigureAwait(false))
            {
                DarqLog.MessageRefused(_logger, Name, header.WorldLine, dse.WorldLine);
                DarqInstrumentation.MessagesRefused.Add(1, _tag);
                throw new DarqMessageRefusedException(Name, header.WorldLine, dse.WorldLine);
            }

            T result;
            try
            {
                result = await body(cancellationToken).ConfigureAwait(false);
            }
            catch (SpeculationRoomException noRoom)
            {
                // Nothing was appended. Ending the action dirties the version (LibDse persists it once more): the reserve
                // behind the hard limit covers that record.
                dse.EndAction();
                DarqInstrumentation.HeldActions.Add(1, _tag);
                await WaitForRoomAsync(noRoom.RoomFreed, dse, cancellationToken).ConfigureAwait(false);
                continue;
            }
            catch
            {
                dse.EndAction();
                throw;
            }

            return (result, dse.EndAction());
        }
    }

    private ValueTask<(DarqEnqueueResult Result, DseHeader Header)> ReceiveInActionAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        // The checks ReceiveAsync makes through EnqueueAsync, which this path bypasses.
        ArgumentOutOfRangeException.ThrowIfNegative(delivery.SourceLsn);
        CheckPayload(delivery.Payload.Length, nameof(delivery));
        var header = delivery.DseHeader.IsEmpty ? default : DseHeader.Parse(delivery.DseHeader.Span);
        long producer = SourceProducerId(delivery.Source);
        return InActionAsync(header, token => EnqueueCoreAsync(delivery.Payload, producer, delivery.SourceLsn, dedup: true, contiguous: false, token), cancellationToken);
    }

    private async ValueTask<DarqEnqueueResult> EnqueueInActionAsync(ReadOnlyMemory<byte> payload, long producerId, long sequenceNumber, bool dedup,
        bool contiguous, CancellationToken cancellationToken)
        => (await InActionAsync(default, token => EnqueueCoreAsync(payload, producerId, sequenceNumber, dedup, contiguous, token), cancellationToken)
            .ConfigureAwait(false)).Result;

    private async ValueTask<DarqStepResult> StepInActionAsync(long incarnation, DarqStep step, CancellationToken cancellationToken)
    {
        var (result, _) = await InActionAsync(default, token => StepCoreAsync(incarnation, step, token), cancellationToken).ConfigureAwait(false);

        SignalDelivery();
        return result;
    }

    private async ValueTask<DarqProcessor> RegisterInActionAsync(CancellationToken cancellationToken)
        => (await InActionAsync(default, RegisterProcessorCoreAsync, cancellationToken).ConfigureAwait(false)).Result;

    /// <summary>General speculation: sends one OUT message with the DARQ's header and records the acknowledgement in an action started with the reply's header.</summary>
    private async ValueTask<bool> TryDeliverSpeculativeAsync(IDarqDestination destination, long lsn, PendingOut pending, CancellationToken cancellationToken)
    {
        var dse = _dse!;

        // The message carries the DARQ's current vertex, taken inside an action while the entry is still pending (so an
        // entry voided by a restore never leaves under the new world-line), not the vertex of the step that wrote it.
        // Sending it relies on more than that step: a destination deduplicates a source by its largest LSN, so sending
        // it relies on the acknowledgements of this destination's earlier messages, recorded in later versions. Were one
        // of those versions rolled back, its message would be pending again below an LSN the destination holds, and be
        // dropped there as a duplicate; with the current vertex the destination's receipt rolls back with it.
        bool stillPending;
        bool overtaking;
        await PaceAsync(dse, cancellationToken).ConfigureAwait(false);
        await dse.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
        DseHeader header;
        try
        {
            await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                stillPending = _pendingOut.ContainsKey(lsn);
                overtaking = stillPending && RebuiltSinceCollected(pending.Destination) && HasEarlierPendingOut(pending.Destination, lsn);
            }
            finally
            {
                _gate.Release();
            }
        }
        finally
        {
            header = dse.EndAction();
        }

        if (!stillPending)
        {
            return true;
        }

        if (overtaking)
        {
            // A restore made an earlier message to this destination pending again (it voided its acknowledgement) after
            // this turn was collected: sending this one first would raise the destination's deduplication mark above
            // the earlier one, which would then be dropped as a duplicate. The turn ends; the next starts at the earliest.
            DarqLog.DeliveryReordered(_logger, Name, lsn, pending.Destination);
            lock (_lanes)
            {
                if (_lanes.TryGetValue(pending.Destination, out var lane))
                {
                    lane.Reordered = true;
                }
            }

            return false;
        }

        byte[] encoded = header.ToArray();

        ReadOnlyMemory<byte> reply;
        DseHeader replyHeader;
        try
        {
            reply = await destination.DeliverSpeculativeAsync(new DarqDelivery(Name, lsn, pending.Destination, pending.Payload) { DseHeader = encoded },
                cancellationToken).ConfigureAwait(false);
            replyHeader = reply.IsEmpty ? default : DseHeader.Parse(reply.Span);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            throw;
        }
#pragma warning disable CA1031 // Any failure of the destination means "not acknowledged": the message stays pending.
        catch (Exception e)
#pragma warning restore CA1031
        {
            DeliveryFailed(e, lsn, pending);
            return false;
        }

        // The acknowledgement depends on the destination's state: record it inside an action consuming its header. Under
        // backpressure it waits (the message stays pending; if this is cancelled, a later pass resends it, deduplicated).
        await PaceAsync(dse, cancellationToken).ConfigureAwait(false);
        if (!await dse.StartActionAsync(replyHeader, cancellationToken).ConfigureAwait(false))
        {
            DarqLog.MessageRefused(_logger, Name, replyHeader.WorldLine, dse.WorldLine);
            DarqInstrumentation.MessagesRefused.Add(1, _tag);
            return false;
        }

        try
        {
            await AcknowledgeAsync(lsn, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            dse.EndAction();
        }

        return true;
    }

    /// <summary>
    /// Whether the pending OUT messages were rebuilt (a restore) since the turn delivering to <paramref name="destination"/>
    /// collected its messages: only a rebuild makes an earlier message pending again (a step adds at the tail). Under the gate.
    /// </summary>
    private bool RebuiltSinceCollected(string destination)
    {
        lock (_lanes)
        {
            return !_lanes.TryGetValue(destination, out var lane) || lane.CollectedAtRebuild != _pendingOutRebuilds;
        }
    }

    /// <summary>
    /// Whether an OUT message to <paramref name="destination"/> before <paramref name="lsn"/> is pending. A destination
    /// deduplicates a source by its largest LSN, so a source's messages to it must leave in LSN order, each after the
    /// acknowledgement of the one before. Under the gate; looks up the destination's earliest pending message.
    /// </summary>
    private bool HasEarlierPendingOut(string destination, long lsn)
    {
        DarqInstrumentation.DeliveryOrderScans.Add(1, _tag);
        long earliest = EarliestPendingOut(destination);
        return earliest >= 0 && earliest < lsn;
    }

    /// <summary>
    /// General speculation, a destination outside the cluster (<see cref="IDarqDestination.ReceivesSpeculatively"/> false):
    /// sends one OUT message only once the step that wrote it is recoverable, with a durable acknowledgement, and records
    /// the acknowledgement in a local action. Until then the message stays pending (the loop retries with backoff).
    /// </summary>
    private async ValueTask<bool> TryDeliverRecoverableAsync(IDarqDestination destination, long lsn, PendingOut pending, CancellationToken cancellationToken)
    {
        var dse = _dse!;
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            if (!_pendingOut.ContainsKey(lsn))
            {
                // Acknowledged meanwhile, or voided by a restore: nothing to send.
                return true;
            }

            if (!IsRecoverable(lsn, dse))
            {
                return false;
            }
        }
        finally
        {
            _gate.Release();
        }

        try
        {
            await destination.DeliverAsync(new DarqDelivery(Name, lsn, pending.Destination, pending.Payload), cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            throw;
        }
#pragma warning disable CA1031 // Any failure of the destination means "not acknowledged": the message stays pending.
        catch (Exception e)
#pragma warning restore CA1031
        {
            DeliveryFailed(e, lsn, pending);
            return false;
        }

        await PaceAsync(dse, cancellationToken).ConfigureAwait(false);
        await dse.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            await AcknowledgeAsync(lsn, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            dse.EndAction();
        }

        return true;
    }

    /// <summary>Whether the entry at <paramref name="address"/> is inside a version the coordinator committed (it can never be rolled back). Under the gate.</summary>
    private bool IsRecoverable(long address, StateObject dse)
    {
        if (IsVoided(address))
        {
            return false;
        }

        if (address < _prunedTail)
        {
            return true;
        }

        foreach (var record in _versions)
        {
            if (record.Tail > address)
            {
                // A committed version is never rolled back, so its number cannot belong to another lineage here.
                return dse.CommittedVersion >= record.Version;
            }
        }

        // In the current version, not persisted yet.
        return false;
    }

    /// <summary>Persist: a DARQ commit whose cookie records the version; the completion fires once it is durable.</summary>
    internal void PersistVersion(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion)
    {
        DarqVersionRecord record;
        // LibDse's Persist is synchronous; the gate is held only for in-memory work or a short wait for log memory.
        _gate.Wait();
        try
        {
            ThrowIfDisposed();
            var bound = CompletedPrefixStart();
            record = new DarqVersionRecord
            {
                Version = version,
                Tail = _log.TailAddress,
                NextSequence = _nextSequence,
                BoundAddress = bound.Lsn,
                BoundSequence = bound.Sequence,
                Metadata = metadata.ToArray(),
            };
            _versions.Add(record);
            NoteVersionPersisted(record);

            // The next commit must carry the new record even if no entry was appended since the last one.
            _lastCommitTail = -1;
        }
        finally
        {
            _gate.Release();
        }

        // The state is captured (the record); the commit, whose cookie holds the record, may cover entries appended
        // after it: the record says where this version ends.
        _ = Task.Run(() => CompletePersistAsync(record, completion));
    }

    private async Task CompletePersistAsync(DarqVersionRecord record, PersistCompletion completion)
    {
        try
        {
            await CommitVersionAsync(record.Version).ConfigureAwait(false);
            Volatile.Write(ref record.DurableFlag, 1);
            completion.SetDurable();
            SignalDelivery();
        }
#pragma warning disable CA1031 // Reported to LibDse, which faults the StateObject.
        catch (Exception e)
#pragma warning restore CA1031
        {
            DarqLog.PersistFailed(_logger, e, Name, record.Version);
            completion.SetFailed(e);
        }
    }

    /// <summary>
    /// Issues a commit whose cookie holds every version record captured so far and waits for that very commit. Not
    /// <see cref="CommitCoreAsync"/>: when another commit (group commit, CommitAsync, truncation) already carried the
    /// record, it takes its "nothing changed" path and returns once the log's tail is durable, which it may have been
    /// long before, while the commit whose cookie holds the record is still in flight.
    /// </summary>
    private async Task CommitVersionAsync(long version)
    {
        IssuedCommit commit;
        await _gate.WaitAsync(CancellationToken.None).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            commit = IssueCommitUnderGate();
        }
        finally
        {
            _gate.Release();
        }

        await AwaitIssuedCommitAsync(commit, $"of version {version}", CancellationToken.None).ConfigureAwait(false);
        SignalDelivery();
    }

    /// <summary>
    /// Under the gate: issues a commit whose cookie is the state as it is now, even when the tail has not moved since the
    /// last commit (a new version record, a retired producer), and returns it with the tail it covers.
    /// </summary>
    private IssuedCommit IssueCommitUnderGate()
    {
        long tail = _log.TailAddress;
        var pending = _log.CommitStronglyAsync(SerializeCookie(), -1, CancellationToken.None);
        _lastCommitTail = tail;
        _lastCommitBegin = _log.BeginAddress;
        return new IssuedCommit(pending, tail);
    }

    /// <summary>Waits for that very commit (<paramref name="what"/> names it in the error), then for the log to be durable up to its tail.</summary>
    /// <exception cref="IOException">FasterLog refused the commit, or commit-record writes keep failing.</exception>
    private async ValueTask AwaitIssuedCommitAsync(IssuedCommit commit, string what, CancellationToken cancellationToken)
    {
        await UntilCommitFailureAsync(CheckedAsync(commit.Pending, Name, what)).ConfigureAwait(false);
        await WaitForCommitAsync(commit.Tail, cancellationToken).ConfigureAwait(false);

        static async ValueTask CheckedAsync(ValueTask<(bool Success, long Tail, long CommitNum)> pending, string name, string what)
        {
            if (!(await pending.ConfigureAwait(false)).Success)
            {
                throw new IOException($"DARQ '{name}': FasterLog refused the commit {what}.");
            }
        }
    }

    /// <summary>A commit issued under the gate, and the log tail it covers.</summary>
    private readonly record struct IssuedCommit(ValueTask<(bool Success, long Tail, long CommitNum)> Pending, long Tail);

    /// <summary>ListVersions: the durable, unpruned version records.</summary>
    internal async ValueTask<IReadOnlyList<PersistedVersion>> ListPersistedVersionsAsync(CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            var list = new List<PersistedVersion>(_versions.Count);
            foreach (var record in _versions)
            {
                if (Volatile.Read(ref record.DurableFlag) != 0)
                {
                    list.Add(new PersistedVersion(record.Version, record.Metadata));
                }
            }

            return list;
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Prune: forgets versions that will never be restored; truncation may then reach the oldest remaining one's completed prefix.</summary>
    internal void PruneVersions(long version)
    {
        // LibDse's Prune is synchronous, as Persist is (above).
        _gate.Wait();
        try
        {
            while (_versions.Count > 0 && _versions[0].Version <= version)
            {
                _prunedTail = Math.Max(_prunedTail, _versions[0].Tail);
                _versions.RemoveAt(0);
            }

            if (_versions.Count > 0 && _versions[0].BoundAddress > _truncationLimit.Lsn)
            {
                _truncationLimit = new StepStart(_versions[0].BoundAddress, _versions[0].BoundSequence);
            }

            long begin = _log.BeginAddress;
            _voided.RemoveAll(v => v.Until < begin);
            RecountSpeculation(freed: true);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>
    /// Restore: goes back to <paramref name="version"/>'s commit. Appends a ROLLBACK entry voiding everything after it,
    /// restores the deduplication table, rebuilds the in-memory state from the log, supersedes the processor (a new one
    /// gets an incarnation above any ever used) and commits before returning.
    /// </summary>
    internal async ValueTask<ReadOnlyMemory<byte>> RestoreVersionAsync(long version, CancellationToken cancellationToken)
    {
        ValueTask<(bool, long, long)> pending = default;
        long from;
        long marker = -1;
        long waitFor = 0;
        byte[] metadata;
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            DarqVersionRecord? kept = null;
            if (version != 0)
            {
                kept = _versions.Find(v => v.Version == version) ?? throw new InvalidOperationException(
                    $"DARQ '{Name}' cannot restore version {version}; it holds versions [{string.Join(", ", _versions.Select(v => v.Version))}].");
            }
            else if (_beginSequence != 0)
            {
                throw new InvalidOperationException($"DARQ '{Name}' cannot restore the initial state: its log was truncated before address {_log.BeginAddress}.");
            }

            from = kept?.Tail ?? _log.BeginAddress;
            if (_versions.Exists(v => v.Version > version) || _log.TailAddress > from)
            {
                long sequence = kept?.NextSequence ?? _beginSequence;

                // From here on the restore must complete: nothing below observes the caller's token.
                marker = await AppendAsync(DarqEntryFormat.Rollback(sequence, version, from), CancellationToken.None).ConfigureAwait(false);
                waitFor = _log.TailAddress;
                _nextSequence = sequence + 1;
                _voided.Add((from, marker));
                ForgetTruncationMarksFrom(from);
                _versions.RemoveAll(v => v.Version > version);
                if (kept is null)
                {
                    _producers.Clear();
                }
                else
                {
                    foreach (var (producer, value) in kept.Undo)
                    {
                        if (value < 0)
                        {
                            _producers.Remove(producer);
                        }
                        else
                        {
                            _producers[producer] = value;
                        }
                    }

                    kept.Undo.Clear();
                }

                if (_processor is not null)
                {
                    _processor.Supersede(Name, _incarnation + 1);
                    _processor = null;
                }

                await RebuildAsync(from).ConfigureAwait(false);

                RecountSpeculation(freed: true);
                var cookie = CaptureState().Serialize();
                pending = _log.CommitStronglyAsync(cookie, -1, CancellationToken.None);
                _lastCommitTail = waitFor;
                _lastCommitBegin = _log.BeginAddress;
                PulseDeliveryProgress();
            }

            metadata = kept?.Metadata ?? [];
        }
        finally
        {
            _gate.Release();
        }

        if (marker >= 0)
        {
            // The void must be durable before anyone learns the restore happened.
            var (success, _, _) = await pending.ConfigureAwait(false);
            if (!success)
            {
                throw new IOException($"DARQ '{Name}': FasterLog refused the commit of the rollback to version {version}.");
            }

            await WaitForCommitAsync(waitFor, CancellationToken.None).ConfigureAwait(false);
            DarqLog.RolledBack(_logger, Name, version, from, marker);
            DarqInstrumentation.Rollbacks.Add(1, _tag);
            SignalDelivery();
        }

        return metadata;
    }

    /// <summary>Rebuilds unconsumed, consumed and pending-OUT state from the log's [begin, <paramref name="until"/>), skipping voided ranges. Under the gate.</summary>
    private async ValueTask RebuildAsync(long until)
    {
        ClearUnconsumed();
        ClearPendingOut();
        _consumed.Clear();
        long expected = _beginSequence;
        int openStepEntries = 0;
        var openStep = default(StepStart);
        long address = _log.BeginAddress;
        using (var iterator = _log.Scan(_log.BeginAddress, until, name: null, recover: false))
        {
            while (true)
            {
                byte[] entry;
                int length;
                if (!iterator.GetNext(out entry, out length, out address, out _))
                {
                    if (await iterator.WaitAsync(CancellationToken.None).ConfigureAwait(false))
                    {
                        continue;
                    }

                    break;
                }

                if (IsVoided(address))
                {
                    continue;
                }

                var span = entry.AsSpan(0, length);
                string? problem = DarqEntryFormat.TryParse(span, out var kind, out _, out long sequence);
                if (problem is not null || sequence != expected)
                {
                    throw Corrupt(address, problem ?? $"entry sequence {sequence}, expected {expected}");
                }

                expected++;
                ApplyRecovered(kind, span, address, sequence, ref openStepEntries, ref openStep);
            }
        }

        Volatile.Write(ref _unconsumedCount, _unconsumed.Count);
        Volatile.Write(ref _pendingOutCount, _pendingOut.Count);
        AssertSelfCounters();
    }

    /// <summary>Where the completed prefix of the log ends now (the start of the step holding the oldest pending entry). Under the gate.</summary>
    private StepStart CompletedPrefixStart()
    {
        var start = new StepStart(_log.TailAddress, _nextSequence);
        foreach (var message in _unconsumed.Values)
        {
            start = message.Step;
            break;
        }

        foreach (var pending in _pendingOut.Values)
        {
            if (pending.Step.Lsn < start.Lsn)
            {
                start = pending.Step;
            }

            break;
        }

        return start;
    }
}
