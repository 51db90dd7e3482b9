namespace Dse.Darq.Tests;

/// <summary>The DARQ's gate stays exclusive and loses no hand-off, with async, blocking and cancelled waiters mixed.</summary>
public sealed class DarqGateTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public async Task Gate_ConcurrentWaitersWithCancellations_StayExclusiveAndFinish(int seed)
    {
        var gate = new DarqGate();
        int inside = 0;
        int overlaps = 0;
        long entered = 0;
        int cancelled = 0;

        void Critical()
        {
            if (Interlocked.Increment(ref inside) != 1)
            {
                Interlocked.Increment(ref overlaps);
            }

            Interlocked.Increment(ref entered);
            Thread.SpinWait(20);
            Interlocked.Decrement(ref inside);
        }

        async Task AsyncWorker(int id)
        {
            var random = new Random((seed * 100) + id);
            for (int i = 0; i < 2_000; i++)
            {
                if (random.Next(4) == 0 && gate.Wait(0))
                {
                    Critical();
                    gate.Release();
                    continue;
                }

                // Some waits are cancelled soon, possibly while a hand-off is on its way to them.
                using var cancel = random.Next(5) == 0 ? new CancellationTokenSource(TimeSpan.FromTicks(random.Next(1, 2_000))) : null;
                try
                {
                    await gate.WaitAsync(cancel?.Token ?? CancellationToken.None);
                }
                catch (OperationCanceledException)
                {
                    Interlocked.Increment(ref cancelled);
                    continue;
                }

                Critical();
                if (random.Next(3) == 0)
                {
                    await Task.Yield();
                }

                gate.Release();
            }
        }

        void BlockingWorker()
        {
            for (int i = 0; i < 1_000; i++)
            {
                gate.Wait();
                Critical();
                gate.Release();
            }
        }

        var workers = Enumerable.Range(0, 6).Select(id => Task.Run(() => AsyncWorker(id)))
            .Append(Task.Run(BlockingWorker))
            .ToArray();
        await Task.WhenAll(workers).WaitAsync(HangGuard);

        Assert.Equal(0, overlaps);
        Assert.Equal((6 * 2_000) + 1_000 - cancelled, entered);

        // Every cancelled waiter passed its hand-off on: the gate ends free.
        await gate.WaitAsync().WaitAsync(HangGuard);
        Assert.Equal(0, gate.CurrentCount);
        gate.Release();
        Assert.Equal(1, gate.CurrentCount);
    }

    [Fact]
    public async Task WaitAsync_CancelledWhileHeld_NextWaiterGetsTheGate()
    {
        var gate = new DarqGate();
        Assert.True(gate.Wait(0));
        using var cancel = new CancellationTokenSource();
        var cancelledWaiter = gate.WaitAsync(cancel.Token);
        var nextWaiter = gate.WaitAsync();
        cancel.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelledWaiter).WaitAsync(HangGuard);
        Assert.False(nextWaiter.IsCompleted);

        gate.Release();
        await nextWaiter.WaitAsync(HangGuard);
        Assert.False(gate.Wait(0));
        gate.Release();

        // The cancelled waiter's hand-off is passed on in the background: the gate is taken again, then free.
        await gate.WaitAsync().WaitAsync(HangGuard);
        gate.Release();
        Assert.Equal(1, gate.CurrentCount);
    }

    [Fact]
    public void Release_NotHeld_ThrowsAndStaysFree()
    {
        var gate = new DarqGate();
        Assert.Throws<SemaphoreFullException>(gate.Release);
        Assert.Equal(1, gate.CurrentCount);
        Assert.True(gate.Wait(0));
        Assert.False(gate.Wait(0));
        gate.Release();
        Assert.Throws<ArgumentOutOfRangeException>(() => gate.Wait(5));
    }

    [Fact]
    public async Task WaitAsync_AlreadyCancelled_DoesNotTakeTheGate()
    {
        var gate = new DarqGate();
        using var cancel = new CancellationTokenSource();
        cancel.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => gate.WaitAsync(cancel.Token));
        Assert.Equal(1, gate.CurrentCount);
    }
}
