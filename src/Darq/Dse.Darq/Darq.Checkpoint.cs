using System.Buffers.Binary;

namespace Dse.Darq;

/// <summary>
/// Checkpoints: a step-like unit, taken by the processor under its incarnation, that replaces unconsumed SELF messages
/// by a smaller set (a snapshot) atomically — the snapshot's SELF entries and a CHECKPOINT record naming the replaced
/// LSNs in one batch, record last.
/// </summary>
public sealed partial class Darq
{
    /// <summary>
    /// Compacts every unconsumed plain SELF message (activities are left alone) through <paramref name="snapshot"/>: the
    /// messages it returns replace them, atomically. With no SELF message to compact, nothing is appended and the
    /// snapshot function is not called.
    /// </summary>
    /// <param name="incarnation">The processor's incarnation.</param>
    /// <param name="snapshot">Turns the SELF messages into their replacement; runs under the DARQ's gate.</param>
    /// <param name="cancellationToken">Cancels waiting for the gate or for log memory; nothing is appended then.</param>
    /// <returns>The replaced LSNs, the snapshot's LSNs and the address to await for durability.</returns>
    /// <exception cref="ArgumentException">A snapshot payload is too large, or the checkpoint does not fit on one log page.</exception>
    /// <exception cref="DarqStaleIncarnationException">The incarnation is not the current one, or no processor registered with this instance.</exception>
    public ValueTask<DarqCheckpointResult> CheckpointAsync(long incarnation, DarqSnapshot snapshot, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(snapshot);
        return CheckpointInActionAsync(incarnation, null, null, snapshot, cancellationToken);
    }

    /// <summary>
    /// Replaces the named SELF messages by <paramref name="snapshot"/>, atomically. Validated like a step: the incarnation
    /// must be current and every replaced LSN an unconsumed plain SELF message (not an IN message or an activity), named
    /// once; otherwise the checkpoint is refused whole and nothing changes.
    /// </summary>
    /// <param name="incarnation">The processor's incarnation.</param>
    /// <param name="replace">The SELF messages to replace (at least one).</param>
    /// <param name="snapshot">The replacing SELF payloads, in order (copied); may be empty.</param>
    /// <param name="cancellationToken">Cancels waiting for the gate or for log memory; nothing is appended then.</param>
    /// <returns>The replaced LSNs, the snapshot's LSNs and the address to await for durability.</returns>
    /// <exception cref="ArgumentException">Nothing to replace, a payload too large, or the checkpoint does not fit on one log page.</exception>
    /// <exception cref="DarqStaleIncarnationException">The incarnation is not the current one, or no processor registered with this instance.</exception>
    /// <exception cref="DarqStepRejectedException">A replaced LSN failed validation.</exception>
    public ValueTask<DarqCheckpointResult> CheckpointAsync(long incarnation, IReadOnlyList<long> replace, IReadOnlyList<ReadOnlyMemory<byte>> snapshot,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(replace);
        ArgumentNullException.ThrowIfNull(snapshot);
        if (replace.Count == 0)
        {
            throw new ArgumentException("A checkpoint must replace at least one SELF message (to only add SELF messages, take a step).", nameof(replace));
        }

        CheckCheckpointShape(snapshot, replace.Count);
        return CheckpointInActionAsync(incarnation, replace, snapshot, null, cancellationToken);
    }

    /// <summary>Under general speculation a checkpoint, like a step, is a LibDse action (so it belongs to one version).</summary>
    private ValueTask<DarqCheckpointResult> CheckpointInActionAsync(long incarnation, IReadOnlyList<long>? replace,
        IReadOnlyList<ReadOnlyMemory<byte>>? payloads, DarqSnapshot? snapshot, CancellationToken cancellationToken)
    {
        return _dse is null ? CheckpointCoreAsync(incarnation, replace, payloads, snapshot, cancellationToken) : InActionCoreAsync();

        async ValueTask<DarqCheckpointResult> InActionCoreAsync() =>
            (await InActionAsync(default, token => CheckpointCoreAsync(incarnation, replace, payloads, snapshot, token), cancellationToken)
                .ConfigureAwait(false)).Result;
    }

    private async ValueTask<DarqCheckpointResult> CheckpointCoreAsync(long incarnation, IReadOnlyList<long>? replace,
        IReadOnlyList<ReadOnlyMemory<byte>>? payloads, DarqSnapshot? snapshot, CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            if (_processor is null || incarnation != _incarnation)
            {
                DarqLog.StaleIncarnation(_logger, Name, incarnation, _incarnation);
                DarqInstrumentation.CheckpointsRejected.Add(1, _tag);
                throw new DarqStaleIncarnationException(Name, incarnation, _incarnation);
            }

            long[] replaced;
            if (replace is not null)
            {
                ValidateReplaced(replace);
                replaced = [.. replace];
            }
            else
            {
                var messages = new List<DarqMessage>();
                foreach (var (lsn, message) in _unconsumed)
                {
                    if (message.Kind == DarqMessageKind.Self)
                    {
                        messages.Add(new DarqMessage(lsn, DarqMessageKind.Self, message.Payload, IsReplay: false));
                    }
                }

                if (messages.Count == 0)
                {
                    return new DarqCheckpointResult([], [], -1, _log.TailAddress);
                }

                // User code under the gate: if it throws, nothing has been appended yet.
                payloads = snapshot!(messages) ?? throw new InvalidOperationException(
                    $"DARQ '{Name}': the snapshot function returned null; return an empty list to replace the SELF messages by nothing.");
                replaced = new long[messages.Count];
                for (int i = 0; i < replaced.Length; i++)
                {
                    replaced[i] = messages[i].Lsn;
                }

                CheckCheckpointShape(payloads, replaced.Length);
            }

            var entries = new List<byte[]>(payloads!.Count + 1);
            long sequence = _nextSequence;
            foreach (var payload in payloads)
            {
                entries.Add(DarqEntryFormat.Self(sequence++, payload.Span));
            }

            entries.Add(DarqEntryFormat.Checkpoint(sequence++, incarnation, payloads.Count, replaced));
            var addresses = await AppendBatchAsync(entries, cancellationToken).ConfigureAwait(false);

            // Appended: apply the checkpoint to the in-memory state; nothing below can fail.
            var start = new StepStart(addresses[0], _nextSequence);
            NoteStepStart(start);
            var selfLsns = new long[payloads.Count];
            for (int i = 0; i < selfLsns.Length; i++)
            {
                selfLsns[i] = addresses[i];
                AddUnconsumed(addresses[i], new PendingMessage(DarqMessageKind.Self, start, entries[i].AsMemory(DarqEntryFormat.HeaderSize)));
            }

            foreach (long lsn in replaced)
            {
                RemoveUnconsumed(lsn);
                _consumed.Add(lsn);
            }

            _nextSequence = sequence;
            Volatile.Write(ref _unconsumedCount, _unconsumed.Count);
            AssertSelfCounters();
            DarqInstrumentation.Checkpoints.Add(1, _tag);
            DarqInstrumentation.CheckpointReplaced.Add(replaced.Length, _tag);
            long record = addresses[^1];
            DarqLog.CheckpointTaken(_logger, Name, incarnation, replaced.Length, selfLsns.Length, record);
            return new DarqCheckpointResult(replaced, selfLsns, record, record + DarqEntryFormat.LogFootprint(entries[^1].Length));
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Logs that an automatic checkpoint of the processor is due, and which threshold made it so.</summary>
    internal void AutoCheckpointDue(long incarnation, string threshold)
        => DarqLog.AutoCheckpointDue(_logger, Name, incarnation, threshold, UnconsumedSelfCount, UnconsumedSelfBytes);

    /// <summary>Logs an automatic checkpoint of the processor that failed (and changed nothing).</summary>
    internal void AutoCheckpointFailed(Exception exception, long incarnation) => DarqLog.AutoCheckpointFailed(_logger, exception, Name, incarnation);

    /// <summary>A checkpoint's entries must fit on one log page, each payload within the message limit.</summary>
    private void CheckCheckpointShape(IReadOnlyList<ReadOnlyMemory<byte>> payloads, int replacedCount)
    {
        long footprint = DarqEntryFormat.LogFootprint(DarqEntryFormat.CompletionLength(replacedCount));
        foreach (var payload in payloads)
        {
            CheckPayload(payload.Length, "snapshot");
            footprint += DarqEntryFormat.LogFootprint(DarqEntryFormat.HeaderSize + payload.Length);
        }

        long limit = _options.PageSize - 64;
        if (footprint > limit)
        {
            throw new ArgumentException(
                $"The checkpoint (replacing {replacedCount} SELF messages by {payloads.Count}) takes {footprint} bytes of log; a checkpoint must fit " +
                $"on one log page ({limit} bytes, DarqOptions.PageSize).", "snapshot");
        }
    }

    /// <summary>Every replaced LSN must be an unconsumed plain SELF message, named once; call under the gate.</summary>
    private void ValidateReplaced(IReadOnlyList<long> replace)
    {
        var seen = new HashSet<long>(replace.Count);
        foreach (long lsn in replace)
        {
            DarqStepRejection? rejection = null;
            if (!seen.Add(lsn))
            {
                rejection = DarqStepRejection.ConsumedTwiceInStep;
            }
            else if (_unconsumed.TryGetValue(lsn, out var message))
            {
                rejection = message.Kind == DarqMessageKind.Self ? null : DarqStepRejection.NotReplaceable;
            }
            else
            {
                rejection = _consumed.Contains(lsn) || (lsn >= 0 && lsn < _log.BeginAddress)
                    ? DarqStepRejection.AlreadyConsumed
                    : _pendingOut.ContainsKey(lsn) ? DarqStepRejection.NotReplaceable : DarqStepRejection.UnknownMessage;
            }

            if (rejection is { } reason)
            {
                DarqLog.CheckpointRejected(_logger, Name, lsn, reason);
                DarqInstrumentation.CheckpointsRejected.Add(1, _tag);
                throw new DarqStepRejectedException(Name, lsn, reason);
            }
        }
    }

    /// <summary>
    /// Recovery of a CHECKPOINT record: like a completion, but the entries of its step must all be plain SELF messages and
    /// every replaced LSN still in the log an unconsumed plain SELF message from before the checkpoint.
    /// </summary>
    private void ApplyRecoveredCheckpoint(ReadOnlySpan<byte> body, long address, int openStepEntries, StepStart openStep)
    {
        long incarnation = BinaryPrimitives.ReadInt64LittleEndian(body);
        int selfCount = BinaryPrimitives.ReadInt32LittleEndian(body[8..]);
        int count = BinaryPrimitives.ReadInt32LittleEndian(body[12..]);
        if (count < 1 || body.Length != 16 + (8L * count) || selfCount != openStepEntries || incarnation > _incarnation)
        {
            throw Corrupt(address,
                $"checkpoint record (incarnation {incarnation}, {selfCount} SELF entries, {count} replaced) does not match the log " +
                $"({openStepEntries} open step entries, incarnation {_incarnation}, {body.Length} body bytes)");
        }

        long stepStart = openStepEntries > 0 ? openStep.Lsn : address;
        if (openStepEntries > 0)
        {
            // The step's entries are the newest in the log; each must be a plain SELF message (no OUT, no activity).
            int plainSelf = 0;
            foreach (var (lsn, message) in _unconsumed)
            {
                if (lsn >= stepStart && message.Kind == DarqMessageKind.Self)
                {
                    plainSelf++;
                }
            }

            if (plainSelf != openStepEntries)
            {
                throw Corrupt(address, $"the checkpoint's step holds {openStepEntries} entries of which only {plainSelf} are plain SELF messages");
            }
        }

        for (int i = 0; i < count; i++)
        {
            long lsn = BinaryPrimitives.ReadInt64LittleEndian(body[(16 + (8 * i))..]);
            if (lsn < stepStart && _unconsumed.TryGetValue(lsn, out var message) && message.Kind == DarqMessageKind.Self)
            {
                RemoveUnconsumed(lsn);
                _consumed.Add(lsn);
            }
            else if (lsn >= _log.BeginAddress)
            {
                throw Corrupt(address, $"the checkpoint record replaces LSN {lsn}, which is no unconsumed SELF message before it");
            }
        }
    }
}
