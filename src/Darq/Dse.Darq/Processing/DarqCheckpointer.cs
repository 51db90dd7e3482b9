namespace Dse.Darq;

/// <summary>
/// Checkpoints: a step-like unit, taken by the processor under its incarnation, that replaces unconsumed SELF messages by
/// a smaller set (a snapshot) atomically: the snapshot's SELF entries and a CHECKPOINT record naming the replaced LSNs in
/// one batch, record last.
/// </summary>
internal sealed class DarqCheckpointer
{
    private readonly DarqCore _core;
    private readonly DarqInbox _inbox;
    private readonly DarqOutbox _outbox;
    private readonly DarqTruncationMarks _marks;
    private readonly DarqStepper _stepper;

    public DarqCheckpointer(DarqCore core, DarqInbox inbox, DarqOutbox outbox, DarqTruncationMarks marks, DarqStepper stepper)
    {
        _core = core;
        _inbox = inbox;
        _outbox = outbox;
        _marks = marks;
        _stepper = stepper;
    }

    /// <summary>
    /// Replaces the named SELF messages (<paramref name="replace"/>), or every unconsumed plain SELF message when it is
    /// null (through <paramref name="snapshot"/>, which then gives the payloads), by <paramref name="payloads"/>.
    /// </summary>
    public async ValueTask<DarqCheckpointResult> CheckpointAsync(long incarnation, IReadOnlyList<long>? replace, IReadOnlyList<ReadOnlyMemory<byte>>? payloads,
        DarqSnapshot? snapshot, CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            _stepper.CheckIncarnation(incarnation, DarqInstrumentation.CheckpointsRejected);
            long[] replaced;
            if (replace is not null)
            {
                ValidateReplaced(replace);
                replaced = [.. replace];
            }
            else
            {
                var messages = new List<DarqMessage>();
                foreach (var (lsn, message) in _inbox.Messages)
                {
                    if (message.Kind == DarqMessageKind.Self)
                    {
                        messages.Add(new DarqMessage(lsn, DarqMessageKind.Self, message.Payload, IsReplay: false));
                    }
                }

                if (messages.Count == 0)
                {
                    return new DarqCheckpointResult([], [], -1, _core.Log.TailAddress);
                }

                // User code under the gate: if it throws, nothing has been appended yet.
                payloads = snapshot!(messages) ?? throw new InvalidOperationException(
                    $"DARQ '{_core.Name}': the snapshot function returned null; return an empty list to replace the SELF messages by nothing.");
                replaced = new long[messages.Count];
                for (int i = 0; i < replaced.Length; i++)
                {
                    replaced[i] = messages[i].Lsn;
                }

                CheckShape(payloads, replaced.Length);
            }

            var entries = new List<byte[]>(payloads!.Count + 1);
            long sequence = _core.NextSequence;
            foreach (var payload in payloads)
            {
                entries.Add(DarqEntryFormat.Self(sequence++, payload.Span));
            }

            entries.Add(DarqEntryFormat.Checkpoint(sequence++, incarnation, payloads.Count, replaced));
            var addresses = await _core.AppendBatchAsync(entries, cancellationToken).ConfigureAwait(false);

            // Appended: apply the checkpoint to the in-memory state; nothing below can fail.
            var start = new StepStart(addresses[0], _core.NextSequence);
            _marks.NoteStepStart(start);
            var selfLsns = new long[payloads.Count];
            for (int i = 0; i < selfLsns.Length; i++)
            {
                selfLsns[i] = addresses[i];
                _inbox.Add(addresses[i], new PendingMessage(DarqMessageKind.Self, start, entries[i].AsMemory(DarqEntryFormat.HeaderSize)));
            }

            foreach (long lsn in replaced)
            {
                _inbox.Consume(lsn);
            }

            _core.NextSequence = sequence;
            _inbox.AssertCounters();
            DarqInstrumentation.Checkpoints.Add(1, _core.Tag);
            DarqInstrumentation.CheckpointReplaced.Add(replaced.Length, _core.Tag);
            long record = addresses[^1];
            DarqLogMessages.CheckpointTaken(_core.Logger, _core.Name, incarnation, replaced.Length, selfLsns.Length, record);
            return new DarqCheckpointResult(replaced, selfLsns, record, record + DarqEntryFormat.LogFootprint(entries[^1].Length));
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>A checkpoint's entries must fit on one log page, each payload within the message limit.</summary>
    public void CheckShape(IReadOnlyList<ReadOnlyMemory<byte>> payloads, int replacedCount)
    {
        long footprint = DarqEntryFormat.LogFootprint(DarqEntryFormat.CompletionLength(replacedCount));
        foreach (var payload in payloads)
        {
            _core.CheckPayload(payload.Length, "snapshot");
            footprint += DarqEntryFormat.LogFootprint(DarqEntryFormat.HeaderSize + payload.Length);
        }

        long limit = _core.Options.PageSize - 64;
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
            else if (_inbox.TryGet(lsn, out var message))
            {
                rejection = message.Kind == DarqMessageKind.Self ? null : DarqStepRejection.NotReplaceable;
            }
            else
            {
                rejection = _inbox.WasConsumed(lsn, _core.Log.BeginAddress)
                    ? DarqStepRejection.AlreadyConsumed
                    : _outbox.Contains(lsn) ? DarqStepRejection.NotReplaceable : DarqStepRejection.UnknownMessage;
            }

            if (rejection is { } reason)
            {
                DarqLogMessages.CheckpointRejected(_core.Logger, _core.Name, lsn, reason);
                DarqInstrumentation.CheckpointsRejected.Add(1, _core.Tag);
                throw new DarqStepRejectedException(_core.Name, lsn, reason);
            }
        }
    }
}
