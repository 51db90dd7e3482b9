using System.Buffers.Binary;
using System.Runtime.CompilerServices;
using System.Text;

namespace Dse.Darq;

/// <summary>
/// The processor side: registration with incarnations and replay, and serially validated atomic steps, with a fast path
/// for the commonest step (one message consumed, nothing else appended).
/// </summary>
/// <remarks>
/// A valid step is appended as one FasterLog batch (SELF messages, OUT messages, then the completion record listing the
/// consumed LSNs), so it is committed entirely or not at all; validation and append run under the gate, so steps are
/// validated serially against the state the earlier ones left.
/// </remarks>
internal sealed class DarqStepper
{
    /// <summary>Up to this many consumed LSNs, a step's duplicates are found by a linear scan rather than a set.</summary>
    private const int SmallConsumedCount = 8;

    private readonly DarqCore _core;
    private readonly DarqInbox _inbox;
    private readonly DarqOutbox _outbox;
    private readonly DarqTruncationMarks _marks;
    private readonly DarqCommitter _committer;
    private readonly DarqInFeed _feed;

    /// <summary>Whether a processor is handed only committed messages (speculation off).</summary>
    private readonly bool _holdUncommitted;

    public DarqStepper(DarqCore core, DarqInbox inbox, DarqOutbox outbox, DarqTruncationMarks marks, DarqCommitter committer, DarqInFeed feed,
        bool holdUncommitted)
    {
        _core = core;
        _inbox = inbox;
        _outbox = outbox;
        _marks = marks;
        _committer = committer;
        _feed = feed;
        _holdUncommitted = holdUncommitted;
    }

    /// <summary>The entries of the step or batch being appended, reused from step to step; used only under the gate.</summary>
    public DarqStepEntries Entries { get; } = new();

    /// <summary>
    /// Registers a processor: gives it the next incarnation (persisted before this returns), supersedes the previous
    /// processor, and streams to it every unconsumed SELF message, then every unconsumed IN message (each in LSN order,
    /// marked as replay), then live IN traffic.
    /// </summary>
    public async ValueTask<DarqProcessor> RegisterAsync(Darq darq, CancellationToken cancellationToken)
    {
        DarqProcessor processor;
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            long incarnation = _core.Incarnation + 1;
            await _core.AppendAsync(DarqEntryFormat.Register(_core.NextSequence, incarnation), cancellationToken).ConfigureAwait(false);
            _core.NextSequence++;
            _core.Incarnation = incarnation;
            _core.Processor?.Supersede(_core.Name, incarnation);

            var messages = _inbox.Messages;
            int selfCount = 0;
            foreach (var message in messages.Values)
            {
                selfCount += message.Kind != DarqMessageKind.In ? 1 : 0;
            }

            processor = new DarqProcessor(darq, _feed, incarnation, messages.Count, _holdUncommitted, replayEnd: _core.Log.TailAddress);

            // SELF messages (activities are SELF messages too) first, then IN messages, each in LSN order. Spilled IN
            // messages (all after the buffered ones) follow from the feed.
            foreach (bool selfPass in (ReadOnlySpan<bool>)[true, false])
            {
                foreach (var (lsn, message) in messages)
                {
                    if ((message.Kind != DarqMessageKind.In) == selfPass && !message.IsSpilled)
                    {
                        processor.Deliver(new DarqMessage(lsn, message.Kind, message.Payload, IsReplay: true));
                    }
                }
            }

            _core.Processor = processor;
            _feed.Signal();
            DarqLogMessages.ProcessorRegistered(_core.Logger, _core.Name, incarnation, selfCount, messages.Count - selfCount);
            if (DarqInstrumentation.ReplaySize.Enabled)
            {
                DarqInstrumentation.ReplaySize.Record(messages.Count, _core.Tag);
            }
        }
        finally
        {
            _core.Gate.Release();
        }

        await _committer.CommitAsync(cancellationToken).ConfigureAwait(false);
        return processor;
    }

    /// <summary>
    /// The commonest step, one message consumed and nothing appended but its completion record, taken without waiting and
    /// without the general path's entry buffer: validated and applied as <see cref="Prepare"/> and
    /// <see cref="Apply(long)"/> do for it. Returns the completion record's address, or -1, having changed nothing, when
    /// anything is out of the ordinary: the gate is taken, the DARQ is closed or fenced, the incarnation is not the current
    /// one, the message is not unconsumed (the general path then refuses the step, naming the reason), log memory has no
    /// room now (it waits for that), or FasterLog's append throws (it appends again and faults the step's task with the
    /// error, so a step never throws).
    /// </summary>
    /// <remarks>The completion record's stack buffer is not zeroed first: <see cref="DarqEntryFormat.WriteCompletion(Span{byte}, long, long, long)"/> writes all of it.</remarks>
    [SkipLocalsInit]
    public long TryConsumeOne(long incarnation, long lsn)
    {
        var gate = _core.Gate;
        if (!gate.Wait(0))
        {
            return -1;
        }

        try
        {
            if (incarnation != _core.Incarnation || _core.Processor is null || _core.IsClosed || !_inbox.Contains(lsn) || _core.FencedException() is not null)
            {
                return -1;
            }

            Span<byte> completion = stackalloc byte[DarqEntryFormat.CompletionLength(1)];
            DarqEntryFormat.WriteCompletion(completion, _core.NextSequence, incarnation, lsn);
            long address;
            try
            {
                if (!_core.Log.TryEnqueue(completion, out address))
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
            gate.Release();
        }
    }

    /// <summary>The result of a step appended at <paramref name="address"/> that consumed one message and appended nothing but its completion record.</summary>
    /// <remarks>
    /// Built by the caller from the address, not written through an <c>out</c> parameter: the processor's loop copies the
    /// returned <see cref="ValueTask{TResult}"/> as a block, and a block read of fields just written one by one waits for
    /// those writes.
    /// </remarks>
    public static DarqStepResult ConsumingOneResult(long address)
        => DarqStepResult.Completion(address, address + DarqEntryFormat.LogFootprint(DarqEntryFormat.CompletionLength(1)));

    /// <summary>
    /// Applies an appended step that consumed <paramref name="lsn"/> and appended nothing but its completion record, at
    /// <paramref name="address"/> with the next sequence number, as <see cref="Apply(ref long, int)"/> would; under the gate.
    /// </summary>
    public void ApplyConsumingOne(long address, long lsn)
    {
        _marks.NoteStepStart(new StepStart(address, _core.NextSequence));
        _inbox.Consume(lsn);
        _core.NextSequence++;
        if (DarqInstrumentation.Steps.Enabled)
        {
            DarqInstrumentation.Steps.Add(1, _core.Tag);
        }
    }

    /// <summary>
    /// Validates and appends a step (the general path); a consume-only step whose fast path this caller tried already
    /// ends up here too. Completes synchronously when the gate is free and the log has room.
    /// </summary>
    public ValueTask<DarqStepResult> StepAsync(long incarnation, DarqStep step, CancellationToken cancellationToken)
    {
        // Fast path: the gate is free and the log has room, so the step completes synchronously with no allocation but
        // its result. Otherwise the slow path waits, for the gate or for log memory; both validate and append alike.
        var gate = _core.Gate;
        if (cancellationToken.IsCancellationRequested || !gate.Wait(0))
        {
            return StepSlowAsync(incarnation, step, cancellationToken);
        }

        bool release = true;
        try
        {
            Prepare(incarnation, step);
            var entries = Entries;

            // A consume-only step is one entry: FasterLog's single-entry append skips the batch's per-entry interface calls.
            if (entries.Count == 1 ? _core.Log.TryEnqueue(entries.Entry(0), out long first) : _core.Log.TryEnqueue(entries, out first))
            {
                return ValueTask.FromResult(Apply(first));
            }

            // The in-memory log is full: the slow path appends the prepared entries and releases the gate.
            release = false;
            return AppendPreparedAsync(cancellationToken);
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
                gate.Release();
            }
        }
    }

    /// <summary>Only the processor registered with this instance may step: after a DARQ restart the old one must re-register. Under the gate.</summary>
    /// <exception cref="DarqStaleIncarnationException">The incarnation is not the current one, or no processor registered.</exception>
    public void CheckIncarnation(long incarnation, System.Diagnostics.Metrics.Counter<long> rejections)
    {
        _core.ThrowIfClosed();
        if (_core.Processor is null || incarnation != _core.Incarnation)
        {
            DarqLogMessages.StaleIncarnation(_core.Logger, _core.Name, incarnation, _core.Incarnation);
            rejections.Add(1, _core.Tag);
            throw new DarqStaleIncarnationException(_core.Name, incarnation, _core.Incarnation);
        }
    }

    /// <summary>
    /// Writes a validated step's entries (SELF, OUT, completion) after those already in <see cref="Entries"/> (the earlier
    /// steps of a batch, whose sequence numbers come first) and ends the step there. Under the gate.
    /// </summary>
    public void Write(long incarnation, DarqStep step)
    {
        var consumed = step.Consumed;
        var selfMessages = step.SelfMessages;
        var outMessages = step.OutMessages;
        var entries = Entries;
        long sequence = _core.NextSequence + entries.Count;
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

    /// <summary>
    /// Applies step <paramref name="stepIndex"/> of <see cref="Entries"/>, appended at <paramref name="address"/>, to the
    /// in-memory state, and moves <paramref name="address"/> past its entries; cannot fail. Reads only the prepared
    /// entries, never the caller's step, which may have changed. Steps are applied in order.
    /// </summary>
    public DarqStepResult Apply(ref long address, int stepIndex)
    {
        var entries = Entries;
        var (entryStart, entryEnd, destinationStart, destinationEnd) = entries.Step(stepIndex);
        int outCount = destinationEnd - destinationStart;
        int selfCount = entryEnd - entryStart - 1 - outCount;
        var start = new StepStart(address, _core.NextSequence);
        _marks.NoteStepStart(start);

        // FasterLog reports only the first address of a batch: the others follow at aligned sizes.
        var selfLsns = selfCount == 0 ? [] : new long[selfCount];
        for (int i = 0; i < selfCount; i++)
        {
            selfLsns[i] = address;
            var entry = entries.Entry(entryStart + i);
            var kind = (DarqEntryFormat.Flags(entry) & DarqEntryFormat.ActivityFlag) != 0 ? DarqMessageKind.Activity : DarqMessageKind.Self;
            _inbox.Add(address, new PendingMessage(kind, start, entry[DarqEntryFormat.HeaderSize..].ToArray()));
            address += DarqEntryFormat.LogFootprint(entry.Length);
        }

        // A pending OUT keeps its payload in memory only for delivery, within its budget; otherwise delivery reads it back
        // from the log (without destinations nothing here sends it).
        var outLsns = outCount == 0 ? [] : new long[outCount];
        for (int i = 0; i < outLsns.Length; i++)
        {
            outLsns[i] = address;
            var entry = entries.Entry(entryStart + selfCount + i);
            var body = entry[DarqEntryFormat.HeaderSize..];
            _outbox.Add(address, start, entries.Destinations[destinationStart + i], body[(2 + BinaryPrimitives.ReadUInt16LittleEndian(body))..]);
            address += DarqEntryFormat.LogFootprint(entry.Length);
        }

        // The consumed LSNs as the completion record lists them.
        var completion = entries.Entry(entryEnd - 1);
        var completionBody = completion[DarqEntryFormat.HeaderSize..];
        int consumedCount = BinaryPrimitives.ReadInt32LittleEndian(completionBody[12..]);
        for (int i = 0; i < consumedCount; i++)
        {
            _inbox.Consume(BinaryPrimitives.ReadInt64LittleEndian(completionBody[(16 + (8 * i))..]));
        }

        _core.NextSequence += entryEnd - entryStart;
        if (DarqInstrumentation.Steps.Enabled)
        {
            DarqInstrumentation.Steps.Add(1, _core.Tag);
        }

        long completionLsn = address;
        address += DarqEntryFormat.LogFootprint(completion.Length);
        return new DarqStepResult(selfLsns, outLsns, completionLsn, address);
    }

    /// <summary>Checks what can be checked without the gate: sizes and names.</summary>
    /// <param name="step">The step.</param>
    /// <param name="parameter">The argument named in errors.</param>
    /// <param name="batchIndex">The step's index in a batch, named in errors; -1 for a single step.</param>
    public void CheckShape(DarqStep step, string parameter = "step", int batchIndex = -1)
    {
        try
        {
            CheckShapeCore(step);
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

    /// <summary>
    /// Every consumed LSN must be an unconsumed IN or SELF message, named once, and not consumed by an earlier step of the
    /// batch (<paramref name="batchConsumed"/>, null for a single step); call under the gate.
    /// </summary>
    /// <exception cref="DarqStepRejectedException">An LSN failed validation; it names the LSN and why.</exception>
    public void ValidateConsumed(IReadOnlyList<long> consumed, HashSet<long>? batchConsumed)
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

            if (rejection is null && !_inbox.Contains(lsn))
            {
                rejection = _inbox.WasConsumed(lsn, _core.Log.BeginAddress)
                    ? DarqStepRejection.AlreadyConsumed
                    : _outbox.Contains(lsn) ? DarqStepRejection.NotSteppable : DarqStepRejection.UnknownMessage;
            }

            if (rejection is { } reason)
            {
                DarqLogMessages.StepRejected(_core.Logger, _core.Name, lsn, reason);
                DarqInstrumentation.StepsRejected.Add(1, _core.Tag);
                throw new DarqStepRejectedException(_core.Name, lsn, reason);
            }
        }
    }

    /// <summary>
    /// Validates a step and writes its entries (SELF, OUT, completion) into <see cref="Entries"/>; call under the gate.
    /// Throws, changing nothing, when the step is refused.
    /// </summary>
    private void Prepare(long incarnation, DarqStep step)
    {
        CheckIncarnation(incarnation, DarqInstrumentation.StepsRejected);
        ValidateConsumed(step.Consumed, batchConsumed: null);
        Entries.Clear();
        Write(incarnation, step);
    }

    /// <summary>Applies the appended single step in <see cref="Entries"/>, whose entries start at <paramref name="first"/>.</summary>
    private DarqStepResult Apply(long first)
    {
        long address = first;
        return Apply(ref address, 0);
    }

    /// <summary>A step that found the gate taken: waits for it, then validates and appends.</summary>
    private async ValueTask<DarqStepResult> StepSlowAsync(long incarnation, DarqStep step, CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            Prepare(incarnation, step);
            if (!_core.Log.TryEnqueue(Entries, out long first))
            {
                first = await _core.Log.EnqueueAsync(Entries, cancellationToken).ConfigureAwait(false);
            }

            return Apply(first);
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>Appends a prepared step once log memory frees up; owns the gate, which the caller took, and releases it.</summary>
    private async ValueTask<DarqStepResult> AppendPreparedAsync(CancellationToken cancellationToken)
    {
        try
        {
            long first = await _core.Log.EnqueueAsync(Entries, cancellationToken).ConfigureAwait(false);
            return Apply(first);
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    private void CheckShapeCore(DarqStep step)
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
            _core.CheckPayload(length, nameof(step));
            footprint += DarqEntryFormat.LogFootprint(DarqEntryFormat.SelfLength(length));
        }

        var outMessages = step.OutMessages;
        for (int i = 0; i < outMessages.Count; i++)
        {
            var message = outMessages[i];
            _core.CheckPayload(message.Payload.Length, nameof(step));
            int destinationBytes = Encoding.UTF8.GetByteCount(message.Destination);
            if (destinationBytes > DarqEntryFormat.MaxDestinationBytes)
            {
                throw new ArgumentException(
                    $"The destination name '{message.Destination}' has {destinationBytes} UTF-8 bytes; the limit is {DarqEntryFormat.MaxDestinationBytes}.", nameof(step));
            }

            footprint += DarqEntryFormat.LogFootprint(DarqEntryFormat.OutLength(destinationBytes, message.Payload.Length));
        }

        // A step is one FasterLog batch, and a batch must fit on one page (less the page's first 64 bytes).
        long limit = _core.Options.PageSize - 64;
        if (footprint > limit)
        {
            throw new ArgumentException(
                $"The step's entries take {footprint} bytes of log; a step must fit on one log page ({limit} bytes, DarqOptions.PageSize).", nameof(step));
        }
    }
}
