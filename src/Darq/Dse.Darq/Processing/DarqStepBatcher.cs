using System.Buffers.Binary;

namespace Dse.Darq;

/// <summary>
/// Batched steps: several steps validated in order under one gate acquisition and appended together, as if stepped one
/// by one (the same entries, sequence numbers and results), in as few FasterLog batches as fit on a log page each.
/// </summary>
internal sealed class DarqStepBatcher
{
    private readonly DarqCore _core;
    private readonly DarqInbox _inbox;
    private readonly DarqStepper _stepper;

    /// <summary>The LSNs consumed by the earlier steps of the batch being validated; used only under the gate.</summary>
    private HashSet<long>? _batchConsumed;

    /// <summary>Whether the prepared batch is one <see cref="TryPrepareConsumeOnly"/> wrote (applied by <see cref="ApplyConsumeOne"/>); under the gate.</summary>
    private bool _preparedConsumeOnly;

    public DarqStepBatcher(DarqCore core, DarqInbox inbox, DarqStepper stepper)
    {
        _core = core;
        _inbox = inbox;
        _stepper = stepper;
    }

    /// <summary>Checks what can be checked without the gate: none of the steps is null, empty, too large or badly named.</summary>
    public void CheckShapes(IReadOnlyList<DarqStep> steps)
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
                _stepper.CheckShape(step, nameof(steps), i);
            }
        }
    }

    /// <summary>Validates and appends a batch whose shapes were checked; refused whole when any step is refused.</summary>
    public ValueTask<IReadOnlyList<DarqStepResult>> StepBatchAsync(long incarnation, IReadOnlyList<DarqStep> steps, CancellationToken cancellationToken)
    {
        // Fast path, as for one step: the gate is free and the log has room for every FasterLog batch.
        var gate = _core.Gate;
        if (cancellationToken.IsCancellationRequested || !gate.Wait(0))
        {
            return StepBatchSlowAsync(incarnation, steps, cancellationToken);
        }

        bool release = true;
        try
        {
            Prepare(incarnation, steps);
            var results = new DarqStepResult[steps.Count];
            int done = AppendChunks(results);
            if (done == results.Length)
            {
                return ValueTask.FromResult<IReadOnlyList<DarqStepResult>>(results);
            }

            // The in-memory log is full: the slow path appends the rest and releases the gate.
            release = false;
            return AppendRestAsync(results, done, cancellationToken);
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
                gate.Release();
            }
        }
    }

    /// <summary>A batch that found the gate taken: waits for it, then validates and appends.</summary>
    private async ValueTask<IReadOnlyList<DarqStepResult>> StepBatchSlowAsync(long incarnation, IReadOnlyList<DarqStep> steps,
        CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        DarqStepResult[] results;
        try
        {
            Prepare(incarnation, steps);
            results = new DarqStepResult[steps.Count];
        }
        catch
        {
            _core.Gate.Release();
            throw;
        }

        return await AppendRestAsync(results, 0, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Validates every step of the batch in order and writes their entries into the stepper's entries; call under the
    /// gate. Throws, changing nothing, when any step is refused.
    /// </summary>
    private void Prepare(long incarnation, IReadOnlyList<DarqStep> steps)
    {
        _stepper.CheckIncarnation(incarnation, DarqInstrumentation.StepsRejected);
        _preparedConsumeOnly = TryPrepareConsumeOnly(incarnation, steps);
        if (_preparedConsumeOnly)
        {
            return;
        }

        _stepper.Entries.Clear();

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

            _stepper.ValidateConsumed(consumed, batchConsumed);
            batchConsumed?.UnionWith(consumed);
            highest = top;
            _stepper.Write(incarnation, steps[i]);
        }
    }

    /// <summary>
    /// The commonest batch, every step consuming one message and appending nothing else, in rising LSN order (a processor
    /// taking its stream in order): each LSN is checked with one lookup, no step can repeat an earlier one, and each
    /// completion record is written directly (the same bytes <see cref="DarqStepper.Write"/> writes). False, having
    /// prepared nothing, for any other batch, or when a message is not unconsumed: the general preparation then validates
    /// it and refuses it with the reason. Under the gate, after the incarnation check.
    /// </summary>
    private bool TryPrepareConsumeOnly(long incarnation, IReadOnlyList<DarqStep> steps)
    {
        long previous = -1;
        for (int i = 0; i < steps.Count; i++)
        {
            long lsn = steps[i].OnlyConsumed;
            if (lsn <= previous || !_inbox.Contains(lsn))
            {
                return false;
            }

            previous = lsn;
        }

        var entries = _stepper.Entries;
        entries.Clear();
        long sequence = _core.NextSequence;
        for (int i = 0; i < steps.Count; i++)
        {
            DarqEntryFormat.WriteCompletion(entries.Add(DarqEntryFormat.CompletionLength(1)), sequence++, incarnation, steps[i].OnlyConsumed);
            entries.EndStep();
        }

        return true;
    }

    /// <summary>
    /// Applies step <paramref name="stepIndex"/> of a batch <see cref="TryPrepareConsumeOnly"/> prepared (its entry is its
    /// completion record), appended at <paramref name="address"/>, as <see cref="DarqStepper.Apply(ref long, int)"/> would,
    /// and moves <paramref name="address"/> past it. Reads the consumed LSN from the prepared entry, never the caller's step.
    /// </summary>
    private DarqStepResult ApplyConsumeOne(ref long address, int stepIndex)
    {
        long lsn = BinaryPrimitives.ReadInt64LittleEndian(_stepper.Entries.Entry(stepIndex)[(DarqEntryFormat.HeaderSize + 16)..]);
        _stepper.ApplyConsumingOne(address, lsn);
        var result = DarqStepper.ConsumingOneResult(address);
        address = result.DurableAt;
        return result;
    }

    private DarqStepResult ApplyNext(ref long address, int stepIndex)
        => _preparedConsumeOnly ? ApplyConsumeOne(ref address, stepIndex) : _stepper.Apply(ref address, stepIndex);

    /// <summary>
    /// Appends the prepared batch's steps, a page-sized run at a time, while FasterLog has room without waiting, applying
    /// each run once appended; call under the gate. Returns how many steps are appended.
    /// </summary>
    private int AppendChunks(DarqStepResult[] results)
    {
        var entries = _stepper.Entries;
        int next = 0;
        while (next < results.Length)
        {
            int end = NextChunk(next);
            if (!_core.Log.TryEnqueue(entries, out long address))
            {
                return next;
            }

            for (; next < end; next++)
            {
                results[next] = ApplyNext(ref address, next);
            }
        }

        return next;
    }

    /// <summary>
    /// Appends the prepared batch's steps from <paramref name="next"/> on, waiting for log memory as needed; owns the gate,
    /// which the caller took, and releases it. Only waiting before the first append is cancellable.
    /// </summary>
    private async ValueTask<IReadOnlyList<DarqStepResult>> AppendRestAsync(DarqStepResult[] results, int next, CancellationToken cancellationToken)
    {
        try
        {
            var entries = _stepper.Entries;
            while (next < results.Length)
            {
                int end = NextChunk(next);
                if (!_core.Log.TryEnqueue(entries, out long address))
                {
                    // Part of the batch is appended: the rest must follow, whatever the caller's token says.
                    address = await _core.Log.EnqueueAsync(entries, next == 0 ? cancellationToken : CancellationToken.None).ConfigureAwait(false);
                }

                for (; next < end; next++)
                {
                    results[next] = ApplyNext(ref address, next);
                }
            }

            return results;
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>
    /// Chooses the steps of the next FasterLog batch, from <paramref name="next"/> on, and windows the entries to them;
    /// returns the end (exclusive). A FasterLog batch must fit on one page: the run fills what is left of the current page,
    /// as the same steps appended one by one would (so a batch lays out the log exactly as they do), or, when its first
    /// step does not fit there (FasterLog then starts a new page), at most a page. Under the gate.
    /// </summary>
    private int NextChunk(int next)
    {
        var entries = _stepper.Entries;
        long pageSize = _core.Options.PageSize;
        long limit = pageSize - 64;
        long left = pageSize - (_core.Log.TailAddress % pageSize);
        if (entries.StepFootprint(next) <= left)
        {
            limit = Math.Min(limit, left);
        }

        int end = entries.ChunkEnd(next, limit);
        entries.Window(next, end);
        return end;
    }
}
