namespace Dse.Darq;

/// <summary>
/// General speculation through LibDse: the DARQ is a StateObject (<see cref="DarqStateObject"/>). Every mutation runs in a
/// LibDse action (so it belongs to one version, and a received header adds its dependency); durability for the outside
/// world is the coordinator's commit of the version; OUT messages leave before they are committed, one at a time, with
/// the DARQ's header, to destinations in the cluster, and only once recoverable to any other destination.
/// </summary>
internal sealed class GeneralSpeculation : DarqSpeculation
{
    /// <summary>The answer of a version lookup outside an action for an entry in no persisted version.</summary>
    private const long NoVersion = -1;

    private readonly DarqVersionStore _store;
    private DarqStateObject? _dse;

    public GeneralSpeculation(DarqParts parts)
        : base(parts)
    {
        _store = new DarqVersionStore(parts);
    }

    public override StateObject? StateObject => _dse;

    public override bool IsBackpressured => Parts.Pacing.IsHeld;

    public override int UncommittedVersionCount => Parts.Pacing.UncommittedVersions;

    /// <summary>Every OUT message may leave at once: the destination's receipt rolls back with this DARQ, or waits until recoverable.</summary>
    public override long DeliverableBelow => long.MaxValue;

    /// <summary>One message at a time: each is sent with the DARQ's vertex at the time, and acknowledged in an action of its own.</summary>
    public override int DeliveryBatchSize => 1;

    public override int DeliveryWindow => 1;

    private DarqStateObject Dse => _dse ?? throw new InvalidOperationException($"DARQ '{Parts.Core.Name}' is not connected to its coordinator.");

    /// <summary>Opens the StateObject and connects it; the coordinator's answer may restore an earlier version.</summary>
    public override async Task ConnectAsync(CancellationToken cancellationToken)
    {
        var core = Parts.Core;

        // A log written in another mode has no version records: LibDse would restore it to version 0, which voids every
        // entry, acknowledged ones included. Such a log cannot be told from a General one by its contents, so the commit
        // says which mode wrote it.
        if (!Parts.Versions.RecoveredGeneral && core.NextSequence > 0)
        {
            throw new InvalidOperationException(
                $"DARQ '{core.Name}' holds {core.NextSequence} committed entries written without general speculation; opening it with " +
                "DarqSpeculationMode.General would roll every one of them back. Open it in the mode that wrote it " +
                "(Off or IntraParticipant), or start general speculation on empty storage.");
        }

        Parts.Versions.StartLimiting(new StepStart(core.Log.BeginAddress, core.BeginSequence));
        var dse = new DarqStateObject(core.Options.Dse!, _store);
        _dse = dse;
        Parts.Pacing.Attach(dse);

        // The StateObject's heartbeats report this DARQ's depths to the coordinator (its dashboard, dse status).
        var inbox = Parts.Inbox;
        var outbox = Parts.Outbox;
        dse.RegisterQueue(QueueName(core.Name), () => new QueueStatistics(string.Empty, inbox.Count, inbox.SpilledInCount, outbox.Count));
        try
        {
            await dse.ConnectAsync(core.Options.Coordinator!, cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            _dse = null;
            await dse.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    public override ValueTask WaitForRoomAsync(CancellationToken cancellationToken) => PaceAsync(Dse, cancellationToken);

    /// <summary>The DARQ's name as a queue name: control characters replaced, cut to the length heartbeats carry.</summary>
    private static string QueueName(string name)
    {
        var chars = name.Select(static c => char.IsControl(c) ? '?' : c).ToArray();
        return chars.Length <= ParticipantStatistics.MaxQueueNameLength
            ? new string(chars)
            : new string(chars, 0, ParticipantStatistics.MaxQueueNameLength - 1) + "\u2026";
    }

    public override async ValueTask<DarqEnqueueResult> EnqueueAsync(ReadOnlyMemory<byte> payload, long producerId, long sequenceNumber, bool dedup, bool contiguous,
        CancellationToken cancellationToken)
        => (await InActionAsync(default, token => Parts.Intake.EnqueueAsync(payload, producerId, sequenceNumber, dedup, contiguous, token), cancellationToken)
            .ConfigureAwait(false)).Result;

    public override async ValueTask<DarqEnqueueResult> ReceiveAsync(DarqDelivery delivery, CancellationToken cancellationToken)
        => (await ReceiveInActionAsync(delivery, cancellationToken).ConfigureAwait(false)).Result;

    public override async ValueTask<(DarqEnqueueResult Result, ReadOnlyMemory<byte> Header)> ReceiveForTransportAsync(DarqDelivery delivery,
        CancellationToken cancellationToken)
    {
        if (delivery.DseHeader.IsEmpty)
        {
            // A source outside the cluster: acknowledged once recoverable, with no header.
            return await base.ReceiveForTransportAsync(delivery, cancellationToken).ConfigureAwait(false);
        }

        var (received, header) = await ReceiveInActionAsync(delivery, cancellationToken).ConfigureAwait(false);
        return (received, header.ToArray());
    }

    public override async ValueTask<ReadOnlyMemory<byte>> ReceiveSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken)
    {
        var (_, header) = await ReceiveInActionAsync(delivery, cancellationToken).ConfigureAwait(false);
        return header.ToArray();
    }

    public override async ValueTask<DarqProcessor> RegisterAsync(Darq darq, CancellationToken cancellationToken)
        => (await InActionAsync(default, token => Parts.Stepper.RegisterAsync(darq, token), cancellationToken).ConfigureAwait(false)).Result;

    public override async ValueTask<DarqStepResult> StepAsync(long incarnation, DarqStep step, CancellationToken cancellationToken)
    {
        var (result, _) = await InActionAsync(default, token => Parts.Stepper.StepAsync(incarnation, step, token), cancellationToken).ConfigureAwait(false);
        Parts.Committer.SignalCommitted();
        return result;
    }

    public override async ValueTask<DarqConsumeResult> ConsumeAsync(long incarnation, long lsn, CancellationToken cancellationToken)
        => new((await StepAsync(incarnation, new DarqStep().Consume(lsn), cancellationToken).ConfigureAwait(false)).CompletionLsn);

    /// <summary>The whole batch runs in one LibDse action, whose header every OUT message of the batch carries.</summary>
    public override async ValueTask<IReadOnlyList<DarqStepResult>> StepBatchAsync(long incarnation, IReadOnlyList<DarqStep> steps, CancellationToken cancellationToken)
    {
        var (results, _) = await InActionAsync(default, token => Parts.Batcher.StepBatchAsync(incarnation, steps, token), cancellationToken)
            .ConfigureAwait(false);
        Parts.Committer.SignalCommitted();
        return results;
    }

    public override async ValueTask<DarqCheckpointResult> CheckpointAsync(long incarnation, IReadOnlyList<long>? replace,
        IReadOnlyList<ReadOnlyMemory<byte>>? payloads, DarqSnapshot? snapshot, CancellationToken cancellationToken)
        => (await InActionAsync(default, token => Parts.Checkpointer.CheckpointAsync(incarnation, replace, payloads, snapshot, token), cancellationToken)
            .ConfigureAwait(false)).Result;

    /// <summary>
    /// Like an acknowledgement, the discard is a local action: a rollback that voids it makes the message pending again.
    /// Under backpressure it waits before it starts, as every other action does (nothing is appended meanwhile).
    /// </summary>
    public override async ValueTask<long> DiscardAsync(long outLsn, CancellationToken cancellationToken)
    {
        var dse = Dse;
        await PaceAsync(dse, cancellationToken).ConfigureAwait(false);
        await dse.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            return await Parts.Acknowledger.DiscardAsync(outLsn, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            dse.EndAction();
        }
    }

    /// <summary>A local action, as an enqueue's: a rollback that voids it restores the producer's entry; returns once the coordinator committed its version.</summary>
    public override async ValueTask<bool> RetireProducerAsync(long producerId, CancellationToken cancellationToken)
    {
        var (retired, header) = await InActionAsync(default, token => Parts.Intake.RetireAsync(producerId, token), cancellationToken).ConfigureAwait(false);
        if (retired)
        {
            await Dse.WaitForCommitAsync(header.Origin.Version, header.WorldLine, cancellationToken).ConfigureAwait(false);
        }

        return retired;
    }

    /// <summary>Waits until the entry at <paramref name="address"/> is inside a version the coordinator committed.</summary>
    /// <exception cref="DseRolledBackException">The entry was rolled back.</exception>
    public override async ValueTask WaitForRecoverableAsync(long address, CancellationToken cancellationToken)
    {
        var dse = Dse;

        // A persisted version's record names the versions an entry may belong to. An entry in no record belongs to the
        // current version, but CurrentVersion is only stable inside an action: between LibDse's version bump and the
        // Persist that records the old version, it already names the next one (which an idle DARQ may never persist).
        var (version, worldLine) = await FindVersionAsync(dse, address, inAction: false, cancellationToken).ConfigureAwait(false);
        if (version == NoVersion)
        {
            // A local action dirties the version: under backpressure it would make LibDse persist one more.
            await PaceAsync(dse, cancellationToken).ConfigureAwait(false);
            await dse.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                (version, worldLine) = await FindVersionAsync(dse, address, inAction: true, cancellationToken).ConfigureAwait(false);
            }
            finally
            {
                dse.EndAction();
            }
        }

        if (version == DarqVersions.Recoverable)
        {
            return;
        }

        await dse.WaitForCommitAsync(version, worldLine, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>A durable acknowledgement waits for the coordinator to commit the version (a barrier); the address is an exclusive end.</summary>
    public override ValueTask EnsureDurableAsync(long address, CancellationToken cancellationToken) => WaitForRecoverableAsync(address - 1, cancellationToken);

    /// <summary>
    /// Sends one OUT message: to a destination in the cluster at once with the DARQ's current header; to any other once the
    /// step that wrote it is recoverable, durably.
    /// </summary>
    public override ValueTask<SendOutcome> SendAsync(IDarqDestination destination, KeyValuePair<long, PendingOut>[] run, long collectedAtRebuild,
        CancellationToken cancellationToken)
        => destination.ReceivesSpeculatively
            ? SendSpeculativeAsync(destination, run[0].Key, run[0].Value, collectedAtRebuild, cancellationToken)
            : SendRecoverableAsync(destination, run[0].Key, run[0].Value, cancellationToken);

    /// <summary>The acknowledgement depends on the destination's state: it is recorded inside an action consuming the reply's header.</summary>
    public override async ValueTask<bool> AcknowledgeAsync(long[] lsns, ReadOnlyMemory<byte> replyHeader, CancellationToken cancellationToken)
    {
        var dse = Dse;
        var header = replyHeader.IsEmpty ? default : DseHeader.Parse(replyHeader.Span);

        // Under backpressure it waits (the message stays pending; if this is cancelled, a later pass resends it, deduplicated).
        await PaceAsync(dse, cancellationToken).ConfigureAwait(false);
        // An empty header (a durable acknowledgement) starts a local action.
        if (!await dse.StartActionAsync(header, cancellationToken).ConfigureAwait(false))
        {
            DarqLogMessages.MessageRefused(Parts.Core.Logger, Parts.Core.Name, header.WorldLine, dse.WorldLine);
            DarqInstrumentation.MessagesRefused.Add(1, Parts.Core.Tag);
            return false;
        }

        try
        {
            await Parts.Acknowledger.AcknowledgeAsync(lsns, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            dse.EndAction();
        }

        return true;
    }

    /// <summary>Stops the StateObject first: no version advance or rollback may run once the log closes.</summary>
    public override async ValueTask DisposeAsync()
    {
        if (_dse is { } dse)
        {
            await dse.DisposeAsync().ConfigureAwait(false);
        }
    }

    private ValueTask PaceAsync(StateObject dse, CancellationToken cancellationToken)
        => Parts.Pacing.PaceAsync(dse, RecountAsync, cancellationToken);

    /// <summary>A waiter's re-check: recounts under the gate.</summary>
    private async ValueTask RecountAsync(CancellationToken cancellationToken)
    {
        var core = Parts.Core;
        await core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            core.ThrowIfClosed();
            Parts.Versions.Recount();
        }
        finally
        {
            core.Gate.Release();
        }
    }

    /// <summary>
    /// Runs <paramref name="body"/> in a LibDse action consuming <paramref name="header"/>; returns its result and the
    /// action's header. Waits first while backpressure holds new actions (<see cref="DarqPacing"/>); a body that finds no
    /// room for a producer change (before appending anything) ends the action, waits for room and starts over.
    /// </summary>
    private async ValueTask<(T Result, DseHeader Header)> InActionAsync<T>(DseHeader header, Func<CancellationToken, ValueTask<T>> body,
        CancellationToken cancellationToken)
    {
        var dse = Dse;
        var core = Parts.Core;
        while (true)
        {
            await PaceAsync(dse, cancellationToken).ConfigureAwait(false);
            if (!await dse.StartActionAsync(header, cancellationToken).ConfigureAwait(false))
            {
                DarqLogMessages.MessageRefused(core.Logger, core.Name, header.WorldLine, dse.WorldLine);
                DarqInstrumentation.MessagesRefused.Add(1, core.Tag);
                throw new DarqMessageRefusedException(core.Name, header.WorldLine, dse.WorldLine);
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
                DarqInstrumentation.HeldActions.Add(1, core.Tag);
                await DarqPacing.WaitForRoomAsync(noRoom.RoomFreed, dse, cancellationToken).ConfigureAwait(false);
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
        var header = delivery.DseHeader.IsEmpty ? default : DseHeader.Parse(delivery.DseHeader.Span);
        long producer = Darq.SourceProducerId(delivery.Source);
        return InActionAsync(header, token => Parts.Intake.EnqueueAsync(delivery.Payload, producer, delivery.SourceLsn, dedup: true, contiguous: false, token),
            cancellationToken);
    }

    /// <summary>
    /// Under the gate: the version holding the entry at <paramref name="address"/> (<see cref="DarqVersions.Recoverable"/>
    /// when it is committed already), or <see cref="NoVersion"/> when no persisted version holds it and the caller is not
    /// inside an action (where the current version is the answer).
    /// </summary>
    /// <exception cref="DseRolledBackException">The entry was rolled back.</exception>
    private async ValueTask<(long Version, long WorldLine)> FindVersionAsync(StateObject dse, long address, bool inAction, CancellationToken cancellationToken)
    {
        var core = Parts.Core;
        await core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            core.ThrowIfClosed();

            // The tail holds no entry yet: a version holding it may never be persisted (an idle StateObject does not
            // advance), so a DurableAt at the tail means the entry that ends there.
            if (address == core.Log.TailAddress && address > core.Log.BeginAddress)
            {
                address = core.Log.TailAddress - 1;
            }

            long version = Parts.Versions.VersionOf(address, inAction ? dse.CurrentVersion : NoVersion);
            return (version, version == DarqVersions.Recoverable ? 0 : dse.WorldLine);
        }
        finally
        {
            core.Gate.Release();
        }
    }

    /// <summary>Sends one OUT message with the DARQ's current header; the acknowledgement follows in an action with the reply's header.</summary>
    private async ValueTask<SendOutcome> SendSpeculativeAsync(IDarqDestination destination, long lsn, PendingOut pending, long collectedAtRebuild,
        CancellationToken cancellationToken)
    {
        var dse = Dse;
        var core = Parts.Core;

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
            await core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                var outbox = Parts.Outbox;
                stillPending = outbox.Contains(lsn);

                // Only a rebuild (a restore) makes an earlier message pending again (a step adds at the tail). A
                // destination deduplicates a source by its largest LSN, so its messages must leave in LSN order.
                overtaking = stillPending && outbox.Rebuilds != collectedAtRebuild && HasEarlierPendingOut(pending.Destination, lsn);
            }
            finally
            {
                core.Gate.Release();
            }
        }
        finally
        {
            header = dse.EndAction();
        }

        if (!stillPending)
        {
            return SendOutcome.Skipped;
        }

        if (overtaking)
        {
            // A restore made an earlier message to this destination pending again (it voided its acknowledgement) after
            // this run was collected: sending this one first would raise the destination's deduplication mark above the
            // earlier one, which would then be dropped as a duplicate. The turn ends; the next starts at the earliest.
            DarqLogMessages.DeliveryReordered(core.Logger, core.Name, lsn, pending.Destination);
            return SendOutcome.Reordered;
        }

        var reply = await destination.DeliverSpeculativeAsync(new DarqDelivery(core.Name, lsn, pending.Destination, pending.Payload) { DseHeader = header.ToArray() },
            cancellationToken).ConfigureAwait(false);
        if (!reply.IsEmpty)
        {
            // Malformed: a failed delivery (the message stays pending).
            _ = DseHeader.Parse(reply.Span);
        }

        return SendOutcome.Sent(DarqSentBatch.Durable, reply);
    }

    /// <summary>Whether an OUT message to <paramref name="destination"/> before <paramref name="lsn"/> is pending. Under the gate.</summary>
    private bool HasEarlierPendingOut(string destination, long lsn)
    {
        DarqInstrumentation.DeliveryOrderScans.Add(1, Parts.Core.Tag);
        long earliest = Parts.Outbox.Earliest(destination);
        return earliest >= 0 && earliest < lsn;
    }

    /// <summary>
    /// A destination outside the cluster (<see cref="IDarqDestination.ReceivesSpeculatively"/> false): sends one OUT message
    /// only once the step that wrote it is recoverable, with a durable acknowledgement. Until then the message stays
    /// pending (the lane backs off and tries again).
    /// </summary>
    private async ValueTask<SendOutcome> SendRecoverableAsync(IDarqDestination destination, long lsn, PendingOut pending, CancellationToken cancellationToken)
    {
        var dse = Dse;
        var core = Parts.Core;
        await core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            core.ThrowIfClosed();
            if (!Parts.Outbox.Contains(lsn))
            {
                // Acknowledged meanwhile, or voided by a restore: nothing to send.
                return SendOutcome.Skipped;
            }

            if (!Parts.Versions.IsRecoverable(lsn, dse.CommittedVersion))
            {
                return SendOutcome.Held;
            }
        }
        finally
        {
            core.Gate.Release();
        }

        await destination.DeliverAsync(new DarqDelivery(core.Name, lsn, pending.Destination, pending.Payload), cancellationToken).ConfigureAwait(false);
        return SendOutcome.Sent(DarqSentBatch.Durable);
    }
}
