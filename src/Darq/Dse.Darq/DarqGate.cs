namespace Dse.Darq;

/// <summary>
/// The DARQ's mutual-exclusion gate, async-aware: a count of holders and waiters changed with one interlocked operation
/// on entry and one on exit when uncontended (a step takes and releases it once), and a semaphore that hands the gate
/// to the next waiter only under contention. Replaces a <see cref="SemaphoreSlim"/>(1, 1), whose every acquisition and
/// release also takes a monitor; the members used are named as <see cref="SemaphoreSlim"/>'s.
/// </summary>
/// <remarks>
/// <para>Invariant: <c>_count</c> is the number of contenders, the holder included; 0 means free. Entering increments
/// it, and whoever made it 1 holds the gate; the others wait for a hand-off. Releasing decrements it and, when
/// contenders remain, hands off once through <c>_handoff</c>: exactly one waiter then holds the gate.</para>
/// <para>A waiter whose wait is cancelled is still counted, and a hand-off may already be on its way to it. So it does
/// not leave the count: it passes the gate on in the background (waits for its hand-off, then releases), and its caller
/// gets the cancellation at once. The gate stays exclusive and no hand-off is lost.</para>
/// </remarks>
internal sealed class DarqGate
{
    private readonly SemaphoreSlim _handoff = new(0, int.MaxValue);
    private int _count;

    /// <summary>1 when the gate is free, else 0 (as <see cref="SemaphoreSlim.CurrentCount"/> of a (1, 1) semaphore).</summary>
    public int CurrentCount => Volatile.Read(ref _count) == 0 ? 1 : 0;

    /// <summary>Takes the gate if it is free, without waiting.</summary>
    /// <param name="millisecondsTimeout">Must be 0: this gate only tries without waiting, or waits without a timeout.</param>
    /// <returns>Whether the gate was taken.</returns>
    public bool Wait(int millisecondsTimeout)
    {
        ArgumentOutOfRangeException.ThrowIfNotEqual(millisecondsTimeout, 0);
        return Interlocked.CompareExchange(ref _count, 1, 0) == 0;
    }

    /// <summary>Takes the gate, blocking the thread until it is handed over.</summary>
    public void Wait()
    {
        if (Interlocked.Increment(ref _count) != 1)
        {
            _handoff.Wait();
        }
    }

    /// <summary>Takes the gate, waiting asynchronously until it is handed over.</summary>
    /// <param name="cancellationToken">Cancels the wait; the gate is then not taken.</param>
    public Task WaitAsync(CancellationToken cancellationToken = default)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return Task.FromCanceled(cancellationToken);
        }

        return Interlocked.Increment(ref _count) == 1 ? Task.CompletedTask : WaitForHandoffAsync(cancellationToken);
    }

    /// <summary>Releases the gate, handing it to one waiter if any.</summary>
    public void Release()
    {
        int left = Interlocked.Decrement(ref _count);
        if (left > 0)
        {
            _handoff.Release();
        }
        else if (left < 0)
        {
            Interlocked.Increment(ref _count);
            throw new SemaphoreFullException("The DARQ's gate was released without being held.");
        }
    }

    private async Task WaitForHandoffAsync(CancellationToken cancellationToken)
    {
        try
        {
            await _handoff.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            // Still counted: take the hand-off when it comes and pass it on, so the next waiter is not stranded.
            _ = PassOnAsync();
            throw;
        }
    }

    private async Task PassOnAsync()
    {
        await _handoff.WaitAsync().ConfigureAwait(false);
        Release();
    }
}
