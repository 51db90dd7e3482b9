namespace Dse.Darq;

/// <summary>The deduplication table seen from outside: what it holds for a producer, and retiring producers from it.</summary>
public sealed partial class Darq
{
    /// <summary>
    /// The number of producers in the deduplication table (at most <see cref="DarqOptions.MaxProducers"/>), source DARQs
    /// that delivered here included.
    /// </summary>
    /// <param name="cancellationToken">Cancels waiting for the gate.</param>
    public async ValueTask<int> ProducerCountAsync(CancellationToken cancellationToken = default)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            return _producers.Count;
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>
    /// The largest sequence number the deduplication table holds for <paramref name="producerId"/>, or
    /// <see langword="null"/> when it does not know the producer (never seen, or retired).
    /// </summary>
    /// <param name="producerId">The producer id (a source DARQ's is <see cref="SourceProducerId"/>).</param>
    /// <param name="cancellationToken">Cancels waiting for the gate.</param>
    public async ValueTask<long?> ProducerSequenceAsync(long producerId, CancellationToken cancellationToken = default)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ThrowIfDisposed();
            return _producers.TryGetValue(producerId, out long seen) ? seen : null;
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>
    /// Removes a producer that will never send again from the deduplication table, which frees its slot
    /// (<see cref="DarqOptions.MaxProducers"/>) and its 16 bytes in every commit record, and returns once the removal
    /// can no longer be lost: without <see cref="DarqSpeculationMode.General"/> speculation, once a commit whose table
    /// lacks the producer is durable; under general speculation, once the coordinator committed the version that removed
    /// it (a rollback before that brings the producer back and throws <see cref="DseRolledBackException"/>).
    /// </summary>
    /// <param name="producerId">The producer id (a source DARQ's is <see cref="SourceProducerId"/>, for a DARQ taken out of service).</param>
    /// <param name="cancellationToken">Cancels waiting for room under backpressure or for the gate (nothing changes then), or for the commit (the removal stands).</param>
    /// <returns><see langword="true"/> when the producer was removed; <see langword="false"/> when the table did not hold it.</returns>
    /// <remarks>
    /// A retired producer that sends again is a new producer: every sequence number is taken again (with
    /// <see cref="DarqOptions.ContiguousProducerSequences"/>, from 0), so a resend of a message it sent before the
    /// retirement is appended a second time. Retire a producer only once nothing of it can still be in flight or resent,
    /// and let it send again only after this returned.
    /// </remarks>
    /// <exception cref="IOException">The commit that carries the removal failed (the removal may still become durable with a later commit).</exception>
    /// <exception cref="DseRolledBackException">General speculation: a rollback voided the removal before it became recoverable.</exception>
    public async ValueTask<bool> RetireProducerAsync(long producerId, CancellationToken cancellationToken = default)
    {
        if (_dse is null)
        {
            return await RetireAndCommitAsync(producerId, cancellationToken).ConfigureAwait(false);
        }

        // A local action, as an enqueue's: a rollback that voids it restores the producer's entry.
        var (retired, header) = await InActionAsync(default, token => RetireCoreAsync(producerId, token), cancellationToken).ConfigureAwait(false);
        if (retired)
        {
            await _dse.WaitForCommitAsync(header.Origin.Version, header.WorldLine, cancellationToken).ConfigureAwait(false);
        }

        return retired;
    }

    /// <summary>
    /// Without general speculation: removes the producer and issues, under the same hold of the gate, a commit whose cookie
    /// lacks it, then waits for that very commit. Not <see cref="CommitCoreAsync"/>: nothing was appended, so when a group
    /// commit already carried the new table its "nothing changed" path would return while that commit is still in flight.
    /// </summary>
    private async ValueTask<bool> RetireAndCommitAsync(long producerId, CancellationToken cancellationToken)
    {
        IssuedCommit commit;
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            if (!RetireUnderGate(producerId))
            {
                return false;
            }

            commit = IssueCommitUnderGate();
        }
        finally
        {
            _gate.Release();
        }

        await AwaitIssuedCommitAsync(commit, $"that retires producer {producerId}", cancellationToken).ConfigureAwait(false);
        return true;
    }

    /// <summary>General speculation: removes the producer's entry inside the caller's action; the version's persist carries the table.</summary>
    private async ValueTask<bool> RetireCoreAsync(long producerId, CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            return RetireUnderGate(producerId);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Removes the producer's entry (recording its undo value under general speculation); under the gate.</summary>
    private bool RetireUnderGate(long producerId)
    {
        ThrowIfDisposed();
        if (!_producers.TryGetValue(producerId, out long seen))
        {
            return false;
        }

        if (_dse is not null)
        {
            EnsureUndoRoom(producerId);
            NoteProducerChange(producerId, seen);
        }

        RemoveProducerUnderGate(producerId, seen);
        return true;
    }

    /// <summary>
    /// Removes a producer the table holds with <paramref name="seen"/>, without the closed and fenced checks (the idle
    /// sweep runs inside a commit, the final one of a close included); under the gate.
    /// </summary>
    private void RemoveProducerUnderGate(long producerId, long seen)
    {
        _producers.Remove(producerId);
        _producerSeenAt?.Remove(producerId);

        // Nothing was appended: a commit that would find the tail unchanged must still carry the new table.
        _lastCommitTail = -1;
        DarqInstrumentation.ProducersRetired.Add(1, _tag);
        DarqLog.ProducerRetired(_logger, Name, producerId, seen, _producers.Count);
    }
}
