using System.Buffers.Binary;

namespace Dse.Darq;

/// <summary>Batched steps: several steps validated in order under one gate acquisition and appended together.</summary>
public sealed partial class Darq
{
    /// <summary>The LSNs consumed by the earlier steps of the batch being validated; used only under the gate.</summary>
    private HashSet<long>? _batchConsumed;

    /// <summary>Whether the prepared batch is one <see cref="TryPrepareConsumeOnlyBatch"/> wrote (applied by <see cref="ApplyConsumeOne"/>); under the gate.</summary>
    private bool _preparedConsumeOnly;

    /// <summary>
    /// Validates and appends several steps at once, as if stepped one by one in order with
    /// <see cref="StepAsync(long, DarqStep, CancellationToken)"/> (the same entries, sequence numbers and results), but
    /// under one acquisition of the DARQ's gate and as few FasterLog batches as fit: consecutive steps go into one
    /// FasterLog batch as long as it fits on one log page, so a batch of small steps is usually one append.
    /// </summary>
    /// <param name="incarnation">The processor's incarnation.</param>
    /// <param name="steps">The steps, in order; none may be empty, each must fit on one log page on its own.</param>
    /// <param name="cancellationToken">
    /// Cancels waiting for the gate or for log memory before anything is appended; once the first steps are appended the
    /// rest of the batch is appended too.
    /// </param>
    /// <returns>Each step's result, in the order given.</returns>
    /// <remarks>
    /// <para>The batch is refused whole: the steps are validated serially, in order, each against the state the earlier
    /// ones leave (so a later step may not consume what an earlier step of the batch consumed: it is refused with
    /// <see cref="DarqStepRejection.AlreadyConsumed"/>), and if any step is refused nothing of the batch is appended.</para>
    /// <para>Each step's entries are contiguous, its completion record last, so recovery sees whole steps. The batch is
    /// appended under the gate, which every commit takes too, so a commit covers all of the batch or none of it.</para>
    /// <para>Under general speculation the whole batch runs in one LibDse action: every OUT message of the batch is sent
    /// with that action's header.</para>
    /// </remarks>
    /// <exception cref="ArgumentException">The batch is empty or holds a null step, or a step is empty, has a payload too large, a destination name too long, or does not fit on one log page (the message names the step's index).</exception>
    /// <exception cref="DarqStaleIncarnationException">The incarnation is not the current one, or no processor registered with this instance.</exception>
    /// <exception cref="DarqStepRejectedException">A consumed LSN of some step failed validation; nothing of the batch was appended.</exception>
    public ValueTask<IReadOnlyList<DarqStepResult>> StepBatchAsync(long incarnation, IReadOnlyList<DarqStep> steps,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(steps);
        if (steps.Count == 0)
        {
            throw new ArgumentException("A batch of steps must hold at least one step.", nameof(steps));
        }

        for (int i = 0; i < steps.Count; i++)
        {
            if (steps[i] is not { } step)
            {
                throw new ArgumentException($"Step {i} of the batch is null. Nothing of the batch was appended.", nameof(steps));
            }

            if (step.OnlyConsumed < 0)
            {
                // A step that only consumes one message is one small record: it always fits.
                CheckStepShape(step, nameof(steps), i);
            }
        }

        return _dse is null ? StepBatchCoreAsync(incarnation, steps, cancellationToken) : StepBatchInActionAsync(incarnation, steps, cancellationToken);
    }

    private ValueTask<IReadOnlyList<DarqStepResult>> StepBatchCoreAsync(long incarnation, IReadOnlyList<DarqStep> steps, CancellationToken cancellationToken)
    {
        // Fast path, as for one step: the gate is free and the log has room for every FasterLog batch.
        if (cancellationToken.IsCancellationRequested || !_gate.Wait(0))
        {
            return StepBatchSlowAsync(incarnation, steps, cancellationToken);
        }

        bool release = true;
        try
        {
            PrepareBatch(incarnation, steps);
            var results = new DarqStepResult[steps.Count];
            int done = AppendBatchChunks(results);
            if (done == results.Length)
            {
                return ValueTask.FromResult<IReadOnlyList<DarqStepResult>>(results);
            }

            // The in-memory log is full: the slow path appends the rest and releases the gate.
            release = false;
            return AppendBatchRestAsync(results, done, cancellationToken);
        }
#pragma warning disable CA1031 // Not swallowed: a refused batch faults the returned task, as the slow path's would.
        catch (Exception e)
#pragma warning restore CA1031
        {
            return ValueTask.FromException<IReadOnlyList<DarqStepResult>>(e);
        }
        finally
        {
            if (release)
            {
                _gate.Release();
            }
        }
    }

    /// <summary>A batch that found the gate taken: waits for it, then validates and appends.</summary>
    private async ValueTask<IReadOnlyList<DarqStepResult>> StepBatchSlowAsync(long incarnation, IReadOnlyList<DarqStep> steps,
        CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        DarqStepResult[] results;
        try
        {
            PrepareBatch(incarnation, steps);
            results = new DarqStepResult[steps.Count];
        }
        catch
        {
            _gate.Release();
            throw;
        }

        return await AppendBatchRestAsync(results, 0, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Validates every step of the batch in order and writes their entries into <see cref="_stepEntries"/>; call under
    /// the gate. Throws, changing nothing, when any step is refused.
    /// </summary>
    private void PrepareBatch(long incarnation, IReadOnlyList<DarqStep> steps)
    {
        CheckIncarnation(incarnation);
        _preparedConsumeOnly = TryPrepareConsumeOnlyBatch(incarnation, steps);
        if (_preparedConsumeOnly)
        {
            return;
        }

        _stepEntries.Clear();

        // A later step must not consume what an earlier one of the batch did. While every step consumes only LSNs above
        // all those consumed before it (a processor taking messages in LSN order), none can repeat, and no set is needed;
        // the set of earlier LSNs is built only once a step goes back below the highest.
        HashSet<long>? batchConsumed = null;
        long highest = long.MinValue;
        for (int i = 0; i < steps.Count; i++)
        {
            var consumed = steps[i].Consumed;
            long lowest = long.MaxValue;
            long top = highest;
            for (int j = 0; j < consumed.Count; j++)
            {
                lowest = Math.Min(lowest, consumed[j]);
                top = Math.Max(top, consumed[j]);
            }

            if (batchConsumed is null && lowest <= highest)
            {
                batchConsumed = _batchConsumed ??= [];
                batchConsumed.Clear();
                for (int k = 0; k < i; k++)
                {
                    batchConsumed.UnionWith(steps[k].Consumed);
                }
            }

            ValidateConsumed(consumed, batchConsumed);
            batchConsumed?.UnionWith(consumed);
            highest = top;
            WriteStep(incarnation, steps[i]);
        }
    }

    /// <summary>
    /// The commonest batch, every step consuming one message and appending nothing else, in rising LSN order (a processor
    /// taking its stream in order): each LSN is checked with one lookup, no step can repeat an earlier one, and each
    /// completion record is written directly (the same bytes <see cref="WriteStep"/> writes). False, having prepared
    /// nothing, for any other batch, or when a message is not unconsumed: the general preparation then validates it and
    /// refuses it with the reason. Under the gate, after the incarnation check.
    /// </summary>
    private bool TryPrepareConsumeOnlyBatch(long incarnation, IReadOnlyList<DarqStep> steps)
    {
        long previous = -1;
        for (int i = 0; i < steps.Count; i++)
        {
            long lsn = steps[i].OnlyConsumed;
            if (lsn <= previous || !_unconsumed.ContainsKey(lsn))
            {
                return false;
            }

            previous = lsn;
        }

        var entries = _stepEntries;
        entries.Clear();
        long sequence = _nextSequence;
        for (int i = 0; i < steps.Count; i++)
        {
            DarqEntryFormat.WriteCompletion(entries.Add(DarqEntryFormat.CompletionLength(1)), sequence++, incarnation, steps[i].OnlyConsumed);
            entries.EndStep();
        }

        return true;
    }

    /// <summary>
    /// Applies step <paramref name="stepIndex"/> of a batch <see cref="TryPrepareConsumeOnlyBatch"/> prepared (its entry is
    /// its completion record), appended at <paramref name="address"/>, as <see cref="ApplyStep(ref long, int)"/> would,
    /// and moves <paramref name="address"/> past it. Reads the consumed LSN from the prepared entry, never the caller's step.
    /// </summary>
    private DarqStepResult ApplyConsumeOne(ref long address, int stepIndex)
    {
        long lsn = BinaryPrimitives.ReadInt64LittleEndian(_stepEntries.Entry(stepIndex)[(DarqEntryFormat.HeaderSize + 16)..]);
        ApplyConsumingOne(address, lsn);
        var result = ConsumingOneResult(address);
        address = result.DurableAt;
        return result;
    }

    /// <summary>
    /// Appends the prepared batch's steps, a page-sized run at a time, while FasterLog has room without waiting, applying
    /// each run once appended; call under the gate. Returns how many steps are appended.
    /// </summary>
    private int AppendBatchChunks(DarqStepResult[] results)
    {
        var entries = _stepEntries;
        int next = 0;
        while (next < results.Length)
        {
            int end = NextChunk(next);
            if (!_log.TryEnqueue(entries, out long address))
            {
                return next;
            }

            for (; next < end; next++)
            {
                results[next] = _preparedConsumeOnly ? ApplyConsumeOne(ref address, next) : ApplyStep(ref address, next);
            }
        }

        return next;
    }

    /// <summary>
    /// Appends the prepared batch's steps from <paramref name="next"/> on, waiting for log memory as needed; owns the gate,
    /// which the caller took, and releases it. Only waiting before the first append is cancellable.
    /// </summary>
    private async ValueTask<IReadOnlyList<DarqStepResult>> AppendBatchRestAsync(DarqStepResult[] results, int next, CancellationToken cancellationToken)
    {
        try
        {
            var entries = _stepEntries;
            while (next < results.Length)
            {
                int end = NextChunk(next);
                if (!_log.TryEnqueue(entries, out long address))
                {
                    // Part of the batch is appended: the rest must follow, whatever the caller's token says.
                    address = await _log.EnqueueAsync(entries, next == 0 ? cancellationToken : CancellationToken.None).ConfigureAwait(false);
                }

                for (; next < end; next++)
                {
                    results[next] = _preparedConsumeOnly ? ApplyConsumeOne(ref address, next) : ApplyStep(ref address, next);
                }
            }

            return results;
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>
    /// Chooses the steps of the next FasterLog batch, from <paramref name="next"/> on, and windows <see cref="_stepEntries"/>
    /// to them; returns the end (exclusive). A FasterLog batch must fit on one page: the run fills what is left of the
    /// current page, as the same steps appended one by one would (so a batch lays out the log exactly as they do), or, when
    /// its first step does not fit there (FasterLog then starts a new page), at most a page. Under the gate.
    /// </summary>
    private int NextChunk(int next)
    {
        long pageSize = _options.PageSize;
        long limit = pageSize - 64;
        long left = pageSize - (_log.TailAddress % pageSize);
        if (_stepEntries.StepFootprint(next) <= left)
        {
            limit = Math.Min(limit, left);
        }

        int end = _stepEntries.ChunkEnd(next, limit);
        _stepEntries.Window(next, end);
        return end;
    }

    /// <summary>General speculation: the batch runs in one LibDse action, whose header every OUT message of the batch carries.</summary>
    private async ValueTask<IReadOnlyList<DarqStepResult>> StepBatchInActionAsync(long incarnation, IReadOnlyList<DarqStep> steps,
        CancellationToken cancellationToken)
    {
        var (results, _) = await InActionAsync(default, token => StepBatchCoreAsync(incarnation, steps, token), cancellationToken)
            .ConfigureAwait(false);

        SignalDelivery();
        return results;
    }
}
