namespace Dse.Darq;

/// <summary>
/// The producer side: IN messages appended by producers (deduplicated or not) and by deliveries from other DARQs,
/// validated against the deduplication table under the gate, and the table's queries and retirements.
/// </summary>
internal sealed class DarqIntake
{
    private readonly DarqCore _core;
    private readonly DarqProducerTable _producers;
    private readonly DarqInbox _inbox;
    private readonly DarqTruncationMarks _marks;
    private readonly DarqVersions _versions;
    private readonly DarqCommitter _committer;
    private readonly DarqInFeed _feed;

    public DarqIntake(DarqCore core, DarqProducerTable producers, DarqInbox inbox, DarqTruncationMarks marks, DarqVersions versions, DarqCommitter committer,
        DarqInFeed feed)
    {
        _core = core;
        _producers = producers;
        _inbox = inbox;
        _marks = marks;
        _versions = versions;
        _committer = committer;
        _feed = feed;
    }

    /// <summary>
    /// Checks and appends an IN entry. <paramref name="contiguous"/>: whether a sequence number more than one above the
    /// producer's is refused (producers' enqueues with <see cref="DarqOptions.ContiguousProducerSequences"/>, never deliveries).
    /// </summary>
    public ValueTask<DarqEnqueueResult> EnqueueAsync(ReadOnlyMemory<byte> payload, long producerId, long sequenceNumber, bool dedup, bool contiguous,
        CancellationToken cancellationToken)
    {
        // Built before taking the gate: only the sequence number and the checksum wait for it.
        var entry = DarqEntryFormat.InUnsealed(payload.Span, producerId, sequenceNumber, dedup);

        // Fast path: the gate is free and the log has room, so the enqueue completes synchronously.
        var gate = _core.Gate;
        if (cancellationToken.IsCancellationRequested || !gate.Wait(0))
        {
            return EnqueueSlowAsync(entry, producerId, sequenceNumber, dedup, contiguous, cancellationToken);
        }

        bool release = true;
        try
        {
            if (IsDuplicate(producerId, sequenceNumber, dedup, contiguous, out var duplicate))
            {
                return ValueTask.FromResult(duplicate);
            }

            DarqEntryFormat.SealIn(entry, _core.NextSequence, dedup);
            if (_core.Log.TryEnqueue(entry, out long lsn))
            {
                return ValueTask.FromResult(Apply(entry, lsn, producerId, sequenceNumber, dedup));
            }

            // The in-memory log is full: the slow path appends the sealed entry and releases the gate.
            release = false;
            return AppendAsync(entry, producerId, sequenceNumber, dedup, cancellationToken);
        }
#pragma warning disable CA1031 // Not swallowed: a refused enqueue faults the returned task, as the slow path's would.
        catch (Exception e)
#pragma warning restore CA1031
        {
            return ValueTask.FromException<DarqEnqueueResult>(e);
        }
        finally
        {
            if (release)
            {
                gate.Release();
            }
        }
    }

    /// <summary>The number of producers in the deduplication table.</summary>
    public async ValueTask<int> ProducerCountAsync(CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            return _producers.Count;
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>The largest sequence number the table holds for a producer, or null.</summary>
    public async ValueTask<long?> ProducerSequenceAsync(long producerId, CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            _core.ThrowIfClosed();
            return _producers.TryGet(producerId, out long seen) ? seen : null;
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>
    /// Removes the producer and issues, under the same hold of the gate, a commit whose cookie lacks it, then waits for
    /// that very commit. Not <see cref="DarqCommitter.CommitAsync"/>: nothing was appended, so when a group commit already
    /// carried the new table its "nothing changed" path would return while that commit is still in flight.
    /// </summary>
    public async ValueTask<bool> RetireAndCommitAsync(long producerId, CancellationToken cancellationToken)
    {
        IssuedCommit commit;
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (!RetireUnderGate(producerId))
            {
                return false;
            }

            commit = _committer.IssueUnderGate();
        }
        finally
        {
            _core.Gate.Release();
        }

        await _committer.AwaitIssuedAsync(commit, $"that retires producer {producerId}", cancellationToken).ConfigureAwait(false);
        return true;
    }

    /// <summary>General speculation: removes the producer's entry inside the caller's action; the version's persist carries the table.</summary>
    public async ValueTask<bool> RetireAsync(long producerId, CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            return RetireUnderGate(producerId);
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>Removes the producer's entry (recording its undo value for restorable versions); under the gate.</summary>
    private bool RetireUnderGate(long producerId)
    {
        _core.ThrowIfClosed();
        if (!_producers.TryGet(producerId, out long seen))
        {
            return false;
        }

        _versions.EnsureUndoRoom(producerId);
        _versions.NoteProducerChange(producerId, seen);
        _committer.RemoveProducer(producerId, seen);
        return true;
    }

    /// <summary>An enqueue that found the gate taken: waits for it, then checks and appends.</summary>
    private async ValueTask<DarqEnqueueResult> EnqueueSlowAsync(byte[] entry, long producerId, long sequenceNumber, bool dedup, bool contiguous,
        CancellationToken cancellationToken)
    {
        await _core.Gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (IsDuplicate(producerId, sequenceNumber, dedup, contiguous, out var duplicate))
            {
                return duplicate;
            }

            DarqEntryFormat.SealIn(entry, _core.NextSequence, dedup);
            long lsn = await _core.AppendAsync(entry, cancellationToken).ConfigureAwait(false);
            return Apply(entry, lsn, producerId, sequenceNumber, dedup);
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>Appends a sealed IN entry once log memory frees up; owns the gate, which the caller took, and releases it.</summary>
    private async ValueTask<DarqEnqueueResult> AppendAsync(byte[] entry, long producerId, long sequenceNumber, bool dedup, CancellationToken cancellationToken)
    {
        try
        {
            long lsn = await _core.Log.EnqueueAsync(entry, cancellationToken).ConfigureAwait(false);
            return Apply(entry, lsn, producerId, sequenceNumber, dedup);
        }
        finally
        {
            _core.Gate.Release();
        }
    }

    /// <summary>
    /// Under the gate: whether a deduplicated enqueue is a duplicate (then <paramref name="result"/> acknowledges it);
    /// throws when the DARQ is closed, the producer would be one too many, (<paramref name="contiguous"/>) the number
    /// skips some, or its change finds no room in the speculation section.
    /// </summary>
    private bool IsDuplicate(long producerId, long sequenceNumber, bool dedup, bool contiguous, out DarqEnqueueResult result)
    {
        _core.ThrowIfClosed();
        result = default;
        if (!dedup)
        {
            return false;
        }

        if (_producers.IsDuplicate(_core.Name, producerId, sequenceNumber, contiguous, _core.Tag))
        {
            result = new DarqEnqueueResult(-1, IsDuplicate: true, DurableAt: _core.Log.TailAddress);
            return true;
        }

        _versions.EnsureUndoRoom(producerId);
        return false;
    }

    /// <summary>Applies an appended IN entry to the in-memory state; under the gate, cannot fail.</summary>
    private DarqEnqueueResult Apply(byte[] entry, long lsn, long producerId, long sequenceNumber, bool dedup)
    {
        var payload = entry.AsMemory(DarqEntryFormat.HeaderSize + 16);
        var start = new StepStart(lsn, _core.NextSequence);
        _marks.NoteStepStart(start);
        var message = _inbox.MayBufferIn(payload.Length) ? new PendingMessage(DarqMessageKind.In, start, payload) : PendingMessage.SpilledIn(start, payload.Length);
        _core.NextSequence++;
        if (dedup)
        {
            long old = _producers.Record(producerId, sequenceNumber);
            _versions.NoteProducerChange(producerId, old);
        }

        _inbox.Add(lsn, message);
        if (!message.IsSpilled)
        {
            // Buffered: nothing is spilled, so the processor has every older IN message already.
            _core.Processor?.Deliver(new DarqMessage(lsn, DarqMessageKind.In, message.Payload, IsReplay: false));
        }
        else
        {
            _feed.Signal();
        }

        if (DarqInstrumentation.Enqueues.Enabled)
        {
            DarqInstrumentation.Enqueues.Add(1, _core.Tag);
        }

        return new DarqEnqueueResult(lsn, IsDuplicate: false, DurableAt: lsn + DarqEntryFormat.LogFootprint(entry.Length));
    }
}
