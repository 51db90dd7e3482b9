using System.Text;

namespace Dse.Darq;

/// <summary>The processor side: registration with incarnations, replay, and serially validated atomic steps.</summary>
public sealed partial class Darq
{
    /// <summary>
    /// Registers a processor: gives it the next incarnation (persisted before this returns), supersedes the previous
    /// processor, and streams to it every unconsumed SELF message, then every unconsumed IN message (each in LSN order,
    /// marked as replay), then live IN traffic.
    /// </summary>
    /// <param name="cancellationToken">Cancels waiting for the gate; once the registration is appended it stands.</param>
    /// <returns>The registered processor.</returns>
    public ValueTask<DarqProcessor> RegisterProcessorAsync(CancellationToken cancellationToken = default)
        => _dse is null ? RegisterProcessorCoreAsync(cancellationToken) : RegisterInActionAsync(cancellationToken);

    private async ValueTask<DarqProcessor> RegisterProcessorCoreAsync(CancellationToken cancellationToken)
    {
        DarqProcessor processor;
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            long incarnation = _incarnation + 1;
            await AppendAsync(DarqEntryFormat.Register(_nextSequence, incarnation), cancellationToken).ConfigureAwait(false);
            _nextSequence++;
            Interlocked.Exchange(ref _incarnation, incarnation);
            _processor?.Supersede(Name, incarnation);

            int selfCount = 0;
            foreach (var message in _unconsumed.Values)
            {
                selfCount += message.Kind != DarqMessageKind.In ? 1 : 0;
            }

            processor = new DarqProcessor(this, incarnation, _unconsumed.Count, holdUncommitted: _options.Speculation == DarqSpeculationMode.Off);
            // SELF messages (activities are SELF messages too) first, then IN messages, each in LSN order.
            foreach (bool selfPass in (ReadOnlySpan<bool>)[true, false])
            {
                foreach (var (lsn, message) in _unconsumed)
                {
                    if ((message.Kind != DarqMessageKind.In) == selfPass)
                    {
                        processor.Deliver(new DarqMessage(lsn, message.Kind, message.Payload, IsReplay: true));
                    }
                }
            }

            _processor = processor;
            DarqLog.ProcessorRegistered(_logger, Name, incarnation, selfCount, _unconsumed.Count - selfCount);
            if (DarqInstrumentation.ReplaySize.Enabled)
            {
                DarqInstrumentation.ReplaySize.Record(_unconsumed.Count, _tag);
            }
        }
        finally
        {
            _gate.Release();
        }

        await CommitCoreAsync(cancellationToken).ConfigureAwait(false);
        return processor;
    }

    /// <summary>
    /// Validates and appends a step. Validation is serial: the incarnation must be current, and every consumed LSN must
    /// be an unconsumed IN or SELF message, each at most once; otherwise the whole step is refused and nothing applies.
    /// A valid step is appended as one batch — SELF messages, OUT messages, then the completion record listing the
    /// consumed LSNs — so that it is committed entirely or not at all.
    /// </summary>
    /// <param name="incarnation">The processor's incarnation.</param>
    /// <param name="step">The step.</param>
    /// <param name="cancellationToken">Cancels waiting for the gate or for log memory; nothing is appended then.</param>
    /// <returns>Where the step's entries went and the address to await for durability.</returns>
    /// <exception cref="ArgumentException">The step is empty, a payload is too large, a destination name is too long, or the step does not fit on one log page.</exception>
    /// <exception cref="DarqStaleIncarnationException">The incarnation is not the current one, or no processor registered with this instance.</exception>
    /// <exception cref="DarqStepRejectedException">A consumed LSN failed validation.</exception>
    public ValueTask<DarqStepResult> StepAsync(long incarnation, DarqStep step, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(step);
        CheckStepShape(step);
        return _dse is null ? StepCoreAsync(incarnation, step, cancellationToken) : StepInActionAsync(incarnation, step, cancellationToken);
    }

    private async ValueTask<DarqStepResult> StepCoreAsync(long incarnation, DarqStep step, CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            // Only the processor registered with this instance may step: after a DARQ restart the old one must re-register.
            if (_processor is null || incarnation != _incarnation)
            {
                DarqLog.StaleIncarnation(_logger, Name, incarnation, _incarnation);
                DarqInstrumentation.StepsRejected.Add(1, _tag);
                throw new DarqStaleIncarnationException(Name, incarnation, _incarnation);
            }

            ValidateConsumed(step.Consumed);

            int produced = step.SelfMessages.Count + step.OutMessages.Count;
            var entries = new List<byte[]>(produced + 1);
            long sequence = _nextSequence;
            for (int i = 0; i < step.SelfMessages.Count; i++)
            {
                entries.Add(DarqEntryFormat.Self(sequence++, step.SelfMessages[i].Span, step.IsActivity(i) ? DarqEntryFormat.ActivityFlag : (ushort)0));
            }

            foreach (var message in step.OutMessages)
            {
                entries.Add(DarqEntryFormat.Out(sequence++, message.Destination, message.Payload.Span));
            }

            entries.Add(DarqEntryFormat.Completion(sequence++, incarnation, produced, step.Consumed));
            var addresses = await AppendBatchAsync(entries, cancellationToken).ConfigureAwait(false);

            // Appended: apply the step to the in-memory state; nothing below can fail.
            var start = new StepStart(addresses[0], _nextSequence);
            var selfLsns = new long[step.SelfMessages.Count];
            var outLsns = new long[step.OutMessages.Count];
            for (int i = 0; i < selfLsns.Length; i++)
            {
                selfLsns[i] = addresses[i];
                var kind = step.IsActivity(i) ? DarqMessageKind.Activity : DarqMessageKind.Self;
                _unconsumed.Add(addresses[i], new PendingMessage(kind, start, entries[i].AsMemory(DarqEntryFormat.HeaderSize)));
            }

            for (int i = 0; i < outLsns.Length; i++)
            {
                int index = selfLsns.Length + i;
                outLsns[i] = addresses[index];
                var message = step.OutMessages[i];
                int destinationBytes = Encoding.UTF8.GetByteCount(message.Destination);
                _pendingOut.Add(addresses[index], new PendingOut(start, message.Destination,
                    entries[index].AsMemory(DarqEntryFormat.HeaderSize + 2 + destinationBytes)));
            }

            foreach (long lsn in step.Consumed)
            {
                _unconsumed.Remove(lsn);
                _consumed.Add(lsn);
            }

            _nextSequence = sequence;
            Volatile.Write(ref _unconsumedCount, _unconsumed.Count);
            Volatile.Write(ref _pendingOutCount, _pendingOut.Count);
            DarqInstrumentation.Steps.Add(1, _tag);
            long completion = addresses[^1];
            return new DarqStepResult(selfLsns, outLsns, completion, completion + DarqEntryFormat.LogFootprint(entries[^1].Length));
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Up to this many consumed LSNs, a step's duplicates are found by a linear scan rather than a set.</summary>
    private const int SmallConsumedCount = 8;

    /// <summary>Checks what can be checked without the gate: sizes and names.</summary>
    private void CheckStepShape(DarqStep step)
    {
        if (step.IsEmpty)
        {
            throw new ArgumentException("A step must consume or produce at least one message.", nameof(step));
        }

        long footprint = DarqEntryFormat.LogFootprint(DarqEntryFormat.CompletionLength(step.Consumed.Count));
        foreach (var payload in step.SelfMessages)
        {
            CheckPayload(payload.Length, nameof(step));
            footprint += DarqEntryFormat.LogFootprint(DarqEntryFormat.HeaderSize + payload.Length);
        }

        foreach (var message in step.OutMessages)
        {
            CheckPayload(message.Payload.Length, nameof(step));
            int destinationBytes = Encoding.UTF8.GetByteCount(message.Destination);
            if (destinationBytes > DarqEntryFormat.MaxDestinationBytes)
            {
                throw new ArgumentException(
                    $"The destination name '{message.Destination}' has {destinationBytes} UTF-8 bytes; the limit is {DarqEntryFormat.MaxDestinationBytes}.", nameof(step));
            }

            footprint += DarqEntryFormat.LogFootprint(DarqEntryFormat.HeaderSize + 2 + destinationBytes + message.Payload.Length);
        }

        // A step is one FasterLog batch, and a batch must fit on one page (less the page's first 64 bytes).
        long limit = _options.PageSize - 64;
        if (footprint > limit)
        {
            throw new ArgumentException(
                $"The step's entries take {footprint} bytes of log; a step must fit on one log page ({limit} bytes, DarqOptions.PageSize).", nameof(step));
        }
    }

    /// <summary>Every consumed LSN must be an unconsumed IN or SELF message, named once; call under the gate.</summary>
    private void ValidateConsumed(IReadOnlyList<long> consumed)
    {
        // Duplicates: a linear scan for a handful of LSNs, a set beyond that (the gate is held, so stay O(n)).
        HashSet<long>? seen = consumed.Count > SmallConsumedCount ? new HashSet<long>(consumed.Count) : null;
        for (int i = 0; i < consumed.Count; i++)
        {
            long lsn = consumed[i];
            DarqStepRejection? rejection = null;
            if (seen is not null)
            {
                rejection = seen.Add(lsn) ? null : DarqStepRejection.ConsumedTwiceInStep;
            }
            else
            {
                for (int j = 0; j < i && rejection is null; j++)
                {
                    if (consumed[j] == lsn)
                    {
                        rejection = DarqStepRejection.ConsumedTwiceInStep;
                    }
                }
            }

            if (rejection is null && !_unconsumed.ContainsKey(lsn))
            {
                rejection = _consumed.Contains(lsn) || (lsn >= 0 && lsn < _log.BeginAddress)
                    ? DarqStepRejection.AlreadyConsumed
                    : _pendingOut.ContainsKey(lsn) ? DarqStepRejection.NotSteppable : DarqStepRejection.UnknownMessage;
            }

            if (rejection is { } reason)
            {
                DarqLog.StepRejected(_logger, Name, lsn, reason);
                DarqInstrumentation.StepsRejected.Add(1, _tag);
                throw new DarqStepRejectedException(Name, lsn, reason);
            }
        }
    }
}
