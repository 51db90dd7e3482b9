using System.Buffers.Binary;
using System.Runtime.CompilerServices;
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

            processor = new DarqProcessor(this, incarnation, _unconsumed.Count, holdUncommitted: _options.Speculation == DarqSpeculationMode.Off,
                replayEnd: _log.TailAddress);
            // SELF messages (activities are SELF messages too) first, then IN messages, each in LSN order. Spilled IN
            // messages (all after the buffered ones) follow from the feed loop.
            foreach (bool selfPass in (ReadOnlySpan<bool>)[true, false])
            {
                foreach (var (lsn, message) in _unconsumed)
                {
                    if ((message.Kind != DarqMessageKind.In) == selfPass && !message.IsSpilled)
                    {
                        processor.Deliver(new DarqMessage(lsn, message.Kind, message.Payload, IsReplay: true));
                    }
                }
            }

            _processor = processor;
            SignalFeed();
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
        long only = step.OnlyConsumed;
        if (only >= 0)
        {
            // A step that only consumes one message is one small record: it always fits.
            long address = _dse is null && !cancellationToken.IsCancellationRequested ? TryStepConsumingOne(incarnation, only) : -1;
            if (address >= 0)
            {
                return new ValueTask<DarqStepResult>(ConsumingOneResult(address));
            }
        }
        else
        {
            CheckStepShape(step);
        }

        return _dse is null ? StepCoreAsync(incarnation, step, cancellationToken) : StepInActionAsync(incarnation, step, cancellationToken);
    }

    /// <summary>
    /// Steps a consume-only step: consumes the message at <paramref name="lsn"/> and appends nothing but the completion
    /// record, as <see cref="StepAsync"/> does with a <see cref="DarqStep"/> that only consumes it, with the same
    /// validation, errors and log bytes; without a step object, and with an 8-byte result.
    /// </summary>
    /// <param name="incarnation">The processor's incarnation.</param>
    /// <param name="lsn">The IN or SELF message to consume.</param>
    /// <param name="cancellationToken">Cancels waiting for the gate or for log memory; nothing is appended then.</param>
    /// <returns>Where the completion record went and the address to await for durability.</returns>
    /// <exception cref="DarqStaleIncarnationException">The incarnation is not the current one, or no processor registered with this instance.</exception>
    /// <exception cref="DarqStepRejectedException">The message is not an unconsumed IN or SELF message.</exception>
    public ValueTask<DarqConsumeResult> ConsumeAsync(long incarnation, long lsn, CancellationToken cancellationToken = default)
    {
        long address = _dse is null && !cancellationToken.IsCancellationRequested ? TryStepConsumingOne(incarnation, lsn) : -1;
        return address >= 0 ? new ValueTask<DarqConsumeResult>(new DarqConsumeResult(address)) : ConsumeSlowAsync(incarnation, lsn, cancellationToken);
    }

    /// <summary>
    /// A consume-only step off the fast path (gate taken, speculation, log full, or a step to refuse): the general path,
    /// entered past <see cref="StepAsync"/>'s own try of the fast path, which this call has just made.
    /// </summary>
    private async ValueTask<DarqConsumeResult> ConsumeSlowAsync(long incarnation, long lsn, CancellationToken cancellationToken)
    {
        var step = new DarqStep().Consume(lsn);
        var result = await (_dse is null ? StepCoreAsync(incarnation, step, cancellationToken) : StepInActionAsync(incarnation, step, cancellationToken))
            .ConfigureAwait(false);
        return new DarqConsumeResult(result.CompletionLsn);
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
            // A consume-only step is one entry: FasterLog's single-entry append skips the batch's per-entry interface calls.
            if (_stepEntries.Count == 1 ? _log.TryEnqueue(_stepEntries.Entry(0), out long first) : _log.TryEnqueue(_stepEntries, out first))
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

    /// <summary>
    /// The commonest step, one message consumed and nothing appended but its completion record, taken without waiting and
    /// without the general path's entry buffer: validated and applied as <see cref="PrepareStep"/> and
    /// <see cref="ApplyStep(long)"/> do for it. Returns the completion record's address, or -1, having changed nothing,
    /// when anything is out of the ordinary: the gate is taken, the DARQ is closed or fenced, the incarnation is not the
    /// current one, the message is not unconsumed (the general path then refuses the step, naming the reason), log memory
    /// has no room now (it waits for that), or FasterLog's append throws (it appends again and faults the step's task with
    /// the error, so a step never throws).
    /// </summary>
    /// <remarks>The completion record's stack buffer is not zeroed first: <see cref="DarqEntryFormat.WriteCompletion(Span{byte}, long, long, long)"/> writes all of it.</remarks>
    [SkipLocalsInit]
    private long TryStepConsumingOne(long incarnation, long lsn)
    {
        if (!_gate.Wait(0))
        {
            return -1;
        }

        try
        {
            if (incarnation != _incarnation || _processor is null || Volatile.Read(ref _disposed) != 0 || !_unconsumed.ContainsKey(lsn) ||
                FencedException() is not null)
            {
                return -1;
            }

            Span<byte> completion = stackalloc byte[DarqEntryFormat.CompletionLength(1)];
            DarqEntryFormat.WriteCompletion(completion, _nextSequence, incarnation, lsn);
            long address;
            try
            {
                if (!_log.TryEnqueue(completion, out address))
                {
                    return -1;
                }
            }
#pragma warning disable CA1031 // Not swallowed: the general path appends again and faults the step's task with what it throws.
            catch (Exception)
#pragma warning restore CA1031
            {
                return -1;
            }

            ApplyConsumingOne(address, lsn);
            return address;
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>The result of a step appended at <paramref name="address"/> that consumed one message and appended nothing but its completion record.</summary>
    /// <remarks>
    /// Built by the caller from the address, not written through an <c>out</c> parameter: the processor's loop copies
    /// the returned <see cref="ValueTask{TResult}"/> as a block, and a block read of fields just written one by one
    /// stalls store forwarding (docs/benchmarks.md, thirteenth pass).
    /// </remarks>
    private static DarqStepResult ConsumingOneResult(long address)
        => DarqStepResult.Completion(address, address + DarqEntryFormat.LogFootprint(DarqEntryFormat.CompletionLength(1)));

    /// <summary>
    /// Applies an appended step that consumed <paramref name="lsn"/> and appended nothing but its completion record, at
    /// <paramref name="address"/> with the next sequence number, as <see cref="ApplyStep(ref long, int)"/> would; under the gate.
    /// </summary>
    private void ApplyConsumingOne(long address, long lsn)
    {
        NoteStepStart(new StepStart(address, _nextSequence));
        RemoveUnconsumed(lsn);
        _consumed.Add(lsn);
        _nextSequence++;
        Volatile.Write(ref _unconsumedCount, _unconsumed.Count);
        if (DarqInstrumentation.Steps.Enabled)
        {
            DarqInstrumentation.Steps.Add(1, _tag);
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
        CheckIncarnation(incarnation);
        ValidateConsumed(step.Consumed, batchConsumed: null);
        _stepEntries.Clear();
        WriteStep(incarnation, step);
    }

    /// <summary>Only the processor registered with this instance may step: after a DARQ restart the old one must re-register. Under the gate.</summary>
    private void CheckIncarnation(long incarnation)
    {
        ThrowIfDisposed();
        if (_processor is null || incarnation != _incarnation)
        {
            DarqLog.StaleIncarnation(_logger, Name, incarnation, _incarnation);
            DarqInstrumentation.StepsRejected.Add(1, _tag);
            throw new DarqStaleIncarnationException(Name, incarnation, _incarnation);
        }
    }

    /// <summary>
    /// Writes a validated step's entries (SELF, OUT, completion) after those already in <see cref="_stepEntries"/> (the
    /// earlier steps of a batch, whose sequence numbers come first) and ends the step there. Under the gate.
    /// </summary>
    private void WriteStep(long incarnation, DarqStep step)
    {
        var consumed = step.Consumed;
        var selfMessages = step.SelfMessages;
        var outMessages = step.OutMessages;
        var entries = _stepEntries;
        long sequence = _nextSequence + entries.Count;
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

        if (selfMessages.Count == 0 && outMessages.Count == 0 && consumed.Count == 1)
        {
            // The commonest step (the same bytes, checksummed from registers), also when it comes in a batch.
            DarqEntryFormat.WriteCompletion(entries.Add(DarqEntryFormat.CompletionLength(1)), sequence, incarnation, consumed[0]);
        }
        else
        {
            DarqEntryFormat.WriteCompletion(entries.Add(DarqEntryFormat.CompletionLength(consumed.Count)), sequence, incarnation,
                selfMessages.Count + outMessages.Count, consumed);
        }

        entries.EndStep();
    }

    /// <summary>Applies the appended single step in <see cref="_stepEntries"/>, whose entries start at <paramref name="first"/>.</summary>
    private DarqStepResult ApplyStep(long first)
    {
        long address = first;
        return ApplyStep(ref address, 0);
    }

    /// <summary>
    /// Applies step <paramref name="stepIndex"/> of <see cref="_stepEntries"/>, appended at <paramref name="address"/>, to
    /// the in-memory state, and moves <paramref name="address"/> past its entries; cannot fail. Reads only the prepared
    /// entries, never the caller's step, which may have changed. Steps are applied in order.
    /// </summary>
    private DarqStepResult ApplyStep(ref long address, int stepIndex)
    {
        var entries = _stepEntries;
        var (entryStart, entryEnd, destinationStart, destinationEnd) = entries.Step(stepIndex);
        int outCount = destinationEnd - destinationStart;
        int selfCount = entryEnd - entryStart - 1 - outCount;
        var start = new StepStart(address, _nextSequence);
        NoteStepStart(start);

        // FasterLog reports only the first address of a batch: the others follow at aligned sizes.
        var selfLsns = selfCount == 0 ? [] : new long[selfCount];
        for (int i = 0; i < selfCount; i++)
        {
            selfLsns[i] = address;
            var entry = entries.Entry(entryStart + i);
            var kind = (DarqEntryFormat.Flags(entry) & DarqEntryFormat.ActivityFlag) != 0 ? DarqMessageKind.Activity : DarqMessageKind.Self;
            AddUnconsumed(address, new PendingMessage(kind, start, entry[DarqEntryFormat.HeaderSize..].ToArray()));
            address += DarqEntryFormat.LogFootprint(entry.Length);
        }

        // A pending OUT keeps its payload in memory only for the delivery loop, within its budget; otherwise the loop
        // reads it back from the log (without destinations nothing here sends it).
        var outLsns = outCount == 0 ? [] : new long[outCount];
        for (int i = 0; i < outLsns.Length; i++)
        {
            outLsns[i] = address;
            var entry = entries.Entry(entryStart + selfCount + i);
            var body = entry[DarqEntryFormat.HeaderSize..];
            AddPendingOut(address, start, entries.Destinations[destinationStart + i], body[(2 + BinaryPrimitives.ReadUInt16LittleEndian(body))..]);
            address += DarqEntryFormat.LogFootprint(entry.Length);
        }

        // The consumed LSNs as the completion record lists them.
        var completion = entries.Entry(entryEnd - 1);
        var completionBody = completion[DarqEntryFormat.HeaderSize..];
        int consumedCount = BinaryPrimitives.ReadInt32LittleEndian(completionBody[12..]);
        for (int i = 0; i < consumedCount; i++)
        {
            long lsn = BinaryPrimitives.ReadInt64LittleEndian(completionBody[(16 + (8 * i))..]);
            RemoveUnconsumed(lsn);
            _consumed.Add(lsn);
        }

        _nextSequence += entryEnd - entryStart;
        Volatile.Write(ref _unconsumedCount, _unconsumed.Count);
        Volatile.Write(ref _pendingOutCount, _pendingOut.Count);
        if (DarqInstrumentation.Steps.Enabled)
        {
            DarqInstrumentation.Steps.Add(1, _tag);
        }
        long completionLsn = address;
        address += DarqEntryFormat.LogFootprint(completion.Length);
        return new DarqStepResult(selfLsns, outLsns, completionLsn, address);
    }

    /// <summary>Up to this many consumed LSNs, a step's duplicates are found by a linear scan rather than a set.</summary>
    private const int SmallConsumedCount = 8;

    /// <summary>Checks what can be checked without the gate: sizes and names.</summary>
    /// <param name="step">The step.</param>
    /// <param name="parameter">The argument named in errors.</param>
    /// <param name="batchIndex">The step's index in a batch, named in errors; -1 for a single step.</param>
    private void CheckStepShape(DarqStep step, string parameter = "step", int batchIndex = -1)
    {
        try
        {
            CheckStepShapeCore(step);
        }
        catch (ArgumentException e) when (batchIndex >= 0)
        {
            throw new ArgumentException($"Step {batchIndex} of the batch: {Unqualified(e)} Nothing of the batch was appended.", parameter, e);
        }

        static string Unqualified(ArgumentException e)
        {
            string suffix = $" (Parameter '{e.ParamName}')";
            return e.ParamName is not null && e.Message.EndsWith(suffix, StringComparison.Ordinal) ? e.Message[..^suffix.Length] : e.Message;
        }
    }

    private void CheckStepShapeCore(DarqStep step)
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

    /// <summary>
    /// Every consumed LSN must be an unconsumed IN or SELF message, named once, and not consumed by an earlier step of the
    /// batch (<paramref name="batchConsumed"/>, null for a single step); call under the gate.
    /// </summary>
    private void ValidateConsumed(IReadOnlyList<long> consumed, HashSet<long>? batchConsumed)
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

            if (rejection is null && batchConsumed is not null && batchConsumed.Contains(lsn))
            {
                rejection = DarqStepRejection.AlreadyConsumed;
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
