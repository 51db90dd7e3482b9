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
    /// (<see cref="DarqOptions.MaxProducers"/>) and its 16 bytes in every commit record. Without <see cref="DarqOptions.Speculation"/>
    /// <see cref="DarqSpeculationMode.General"/> it returns once a commit without the producer is durable; under general
    /// speculation the removal is part of the current version, rolled back with it (the producer comes back) and recoverable
    /// once the coordinator commits that version.
    /// </summary>
    /// <param name="producerId">The producer id (a source DARQ's is <see cref="SourceProducerId"/>, for a DARQ taken out of service).</param>
    /// <param name="cancellationToken">Cancels waiting for room under backpressure or for the gate (nothing changes then), or for the commit (the removal stands).</param>
    /// <returns><see langword="true"/> when the producer was removed; <see langword="false"/> when the table did not hold it.</returns>
    /// <remarks>
    /// A retired producer that sends again is a new producer: every sequence number is taken again (with
    /// <see cref="DarqOptions.ContiguousProducerSequences"/>, from 0), so a resend of a message it sent before the
    /// retirement is appended a second time. Retire a producer only once nothing of it can still be in flight or resent.
    /// If the DARQ crashes before the commit that carries the removal, the producer is in the table again after the
    /// restart, which is safe; retire it again.
    /// </remarks>
    public async ValueTask<bool> RetireProducerAsync(long producerId, CancellationToken cancellationToken = default)
    {
        bool retired;
        if (_dse is null)
        {
            retired = await RetireCoreAsync(producerId, cancellationToken).ConfigureAwait(false);
            if (retired)
            {
                await CommitCoreAsync(cancellationToken).ConfigureAwait(false);
            }

            return retired;
        }

        // A local action, as an enqueue's: a rollback that voids it restores the producer's entry.
        (retired, _) = await InActionAsync(default, token => RetireCoreAsync(producerId, token), cancellationToken).ConfigureAwait(false);
        return retired;
    }

    /// <summary>Removes the producer's entry under the gate; the next commit carries the table without it.</summary>
    private async ValueTask<bool> RetireCoreAsync(long producerId, CancellationToken cancellationToken)
    {
        await _gate.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
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

            _producers.Remove(producerId);

            // Nothing was appended: the next commit must still carry the new table.
            _lastCommitTail = -1;
            DarqInstrumentation.ProducersRetired.Add(1, _tag);
            DarqLog.ProducerRetired(_logger, Name, producerId, seen, _producers.Count);
            return true;
        }
        finally
        {
            _gate.Release();
        }
    }
}
