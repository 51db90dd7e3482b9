using System.Buffers.Binary;
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

    private ValueTask<DarqStepResult> StepCoreAsync(long incarnation, DarqStep step, CancellationToken cancellationToken)
    {
        // Fast path: the gate is free and the log has room, so the step completes synchronously with no allocation but
        // its result. Otherwise the slow path waits, for the gate or for log memory; both validate and append alike.
        if (cancellationToken.IsCancellationRequested || !_gate.Wait(0))
        {
            return StepSlowAsync(incarnation, step, cancellationToken);
        }

        bool release = true;
        try
        {
            PrepareStep(incarnation, step);
            if (_log.TryEnqueue(_stepEntries, out long first))
            {
                return ValueTask.FromResult(ApplyStep(first));
            }

            // The in-memory log is full: the slow path appends the prepared entries and releases the gate.
            release = false;
            return AppendStepAsync(cancellationToken);
        }
#pragma warning disable CA1031 // Not swallowed: a refused step faults the returned task, as the slow path's would.
        catch (Exception e)
#pragma warning restore CA1031
        {
            return ValueTask.FromException<DarqStepResult>(e);
        }
        finally
        {
            if (release)
            {
                _gate.Release();
            }
        }
    }

    /// <summary>A step that found the gate taken: waits for it, then validates and appends.</summary>
    private async ValueTask<DarqStepResult> StepSlowAsync(long incarnation, DarqStep step, CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            PrepareStep(incarnation, step);
            if (!_log.TryEnqueue(_stepEntries, out long first))
            {
                first = await _log.EnqueueAsync(_stepEntries, cancellationToken).ConfigureAwait(false);
            }

            return ApplyStep(first);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Appends a prepared step once log memory frees up; owns the gate, which the caller took, and releases it.</summary>
    private async ValueTask<DarqStepResult> AppendStepAsync(CancellationToken cancellationToken)
    {
        try
        {
            long first = await _log.EnqueueAsync(_stepEntries, cancellationToken).ConfigureAwait(false);
            return ApplyStep(first);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>
    /// Validates a step and writes its entries (SELF, OUT, completion) into <see cref="_stepEntries"/>; call under the
    /// gate. Throws, changing nothing, when the step is refused.
    /// </summary>
    private void PrepareStep(long incarnation, DarqStep step)
    {
        ThrowIfDisposed();
        // Only the processor registered with this instance may step: after a DARQ restart the old one must re-register.
        if (_processor is null || incarnation != _incarnation)
        {
            DarqLog.StaleIncarnation(_logger, Name, incarnation, _incarnation);
            DarqInstrumentation.StepsRejected.Add(1, _tag);
            throw new DarqStaleIncarnationException(Name, incarnation, _incarnation);
        }

        var consumed = step.Consumed;
        ValidateConsumed(consumed);

        var selfMessages = step.SelfMessages;
        var outMessages = step.OutMessages;
        var entries = _stepEntries;
        entries.Clear();
        long sequence = _nextSequence;
        for (int i = 0; i < selfMessages.Count; i++)
        {
            var payload = selfMessages[i].Span;
            DarqEntryFormat.WriteSelf(entries.Add(DarqEntryFormat.SelfLength(payload.Length)), sequence++, payload,
                step.IsActivity(i) ? DarqEntryFormat.ActivityFlag : (ushort)0);
        }

        for (int i = 0; i < outMessages.Count; i++)
        {
            var message = outMessages[i];
            int destinationBytes = Encoding.UTF8.GetByteCount(message.Destination);
            DarqEntryFormat.WriteOut(entries.Add(DarqEntryFormat.OutLength(destinationBytes, message.Payload.Length)), sequence++,
                message.Destination, message.Payload.Span);
            entries.Destinations.Add(message.Destination);
        }

        DarqEntryFormat.WriteCompletion(entries.Add(DarqEntryFormat.CompletionLength(consumed.Count)), sequence, incarnation,
            selfMessages.Count + outMessages.Count, consumed);
    }

    /// <summary>
    /// Applies the appended step in <see cref="_stepEntries"/> (its entries start at <paramref name="first"/>) to the
    /// in-memory state; cannot fail. Reads only the prepared entries, never the caller's step, which may have changed.
    /// </summary>
    private DarqStepResult ApplyStep(long first)
    {
        var entries = _stepEntries;
        int selfCount = entries.Count - 1 - entries.Destinations.Count;
        var start = new StepStart(first, _nextSequence);

        // FasterLog reports only the first address of a batch: the others follow at aligned sizes.
        long address = first;
        var selfLsns = selfCount == 0 ? [] : new long[selfCount];
        for (int i = 0; i < selfCount; i++)
        {
            selfLsns[i] = address;
            var entry = entries.Get(i);
            var kind = (DarqEntryFormat.Flags(entry) & DarqEntryFormat.ActivityFlag) != 0 ? DarqMessageKind.Activity : DarqMessageKind.Self;
            _unconsumed.Add(address, new PendingMessage(kind, start, entry[DarqEntryFormat.HeaderSize..].ToArray()));
            address += DarqEntryFormat.LogFootprint(entries.Length(i));
        }

        // A pending OUT keeps its payload only for the delivery loop; without destinations nothing here sends it (a
        // later instance with destinations reads it back from the log at recovery).
        bool keepPayloads = _options.Destinations is not null;
        var outLsns = entries.Destinations.Count == 0 ? [] : new long[entries.Destinations.Count];
        for (int i = 0; i < outLsns.Length; i++)
        {
            outLsns[i] = address;
            var payload = ReadOnlyMemory<byte>.Empty;
            if (keepPayloads)
            {
                var body = entries.Get(selfCount + i)[DarqEntryFormat.HeaderSize..];
                payload = body[(2 + BinaryPrimitives.ReadUInt16LittleEndian(body))..].ToArray();
            }

            _pendingOut.Add(address, new PendingOut(start, entries.Destinations[i], payload));
            address += DarqEntryFormat.LogFootprint(entries.Length(selfCount + i));
        }

        // The consumed LSNs as the completion record lists them.
        var completionBody = entries.Get(entries.Count - 1)[DarqEntryFormat.HeaderSize..];
        int consumedCount = BinaryPrimitives.ReadInt32LittleEndian(completionBody[12..]);
        for (int i = 0; i < consumedCount; i++)
        {
            long lsn = BinaryPrimitives.ReadInt64LittleEndian(completionBody[(16 + (8 * i))..]);
            _unconsumed.Remove(lsn);
            _consumed.Add(lsn);
        }

        _nextSequence += entries.Count;
        Volatile.Write(ref _unconsumedCount, _unconsumed.Count);
        Volatile.Write(ref _pendingOutCount, _pendingOut.Count);
        DarqInstrumentation.Steps.Add(1, _tag);
        long completion = address;
        return new DarqStepResult(selfLsns, outLsns, completion, completion + DarqEntryFormat.LogFootprint(entries.Length(entries.Count - 1)));
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
        var selfMessages = step.SelfMessages;
        for (int i = 0; i < selfMessages.Count; i++)
        {
            int length = selfMessages[i].Length;
            CheckPayload(length, nameof(step));
            footprint += DarqEntryFormat.LogFootprint(DarqEntryFormat.SelfLength(length));
        }

        var outMessages = step.OutMessages;
        for (int i = 0; i < outMessages.Count; i++)
        {
            var message = outMessages[i];
            CheckPayload(message.Payload.Length, nameof(step));
            int destinationBytes = Encoding.UTF8.GetByteCount(message.Destination);
            if (destinationBytes > DarqEntryFormat.MaxDestinationBytes)
            {
                throw new ArgumentException(
                    $"The destination name '{message.Destination}' has {destinationBytes} UTF-8 bytes; the limit is {DarqEntryFormat.MaxDestinationBytes}.", nameof(step));
            }

            footprint += DarqEntryFormat.LogFootprint(DarqEntryFormat.OutLength(destinationBytes, message.Payload.Length));
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
