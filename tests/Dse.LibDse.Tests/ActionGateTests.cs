namespace Dse.Tests;

public class ActionGateTests
{
    [Fact]
    public async Task CloseAsync_ReaderExitsOnAnotherThread_CompletesAfterExit()
    {
        var gate = new ActionGate();
        Assert.True(gate.TryEnter());

        var close = gate.CloseAsync().AsTask();
        Assert.False(close.IsCompleted);
        Assert.False(gate.TryEnter());

        await Task.Run(gate.Exit);
        await close.WaitAsync(TimeSpan.FromSeconds(30));
        gate.Open();
        Assert.True(gate.TryEnter());
        gate.Exit();
    }

    [Fact]
    public async Task WaitOpenAsync_WhileClosed_CompletesOnOpen()
    {
        var gate = new ActionGate();
        await gate.CloseAsync();
        var open = gate.WaitOpenAsync();
        Assert.False(open.IsCompleted);

        gate.Open();

        await open.WaitAsync(TimeSpan.FromSeconds(30));
    }

    [Fact]
    [Trait("Category", "Stress")]
    public async Task Gate_ReadersAwaitingInsideAndWriters_NeverOverlap()
    {
        var gate = new ActionGate();
        int inside = 0, violations = 0, writes = 0;
        using var stop = new CancellationTokenSource();

        async Task ReaderAsync()
        {
            for (int i = 0; i < 3000; i++)
            {
                while (!gate.TryEnter())
                {
                    await gate.WaitOpenAsync();
                }

                Interlocked.Increment(ref inside);
                await Task.Yield();   // resumes on any pool thread: exit from another thread than the enter
                Interlocked.Decrement(ref inside);
                gate.Exit();
            }
        }

        async Task WriterAsync()
        {
            while (!stop.IsCancellationRequested)
            {
                await gate.CloseAsync();
                if (Volatile.Read(ref inside) != 0)
                {
                    Interlocked.Increment(ref violations);
                }

                writes++;
                gate.Open();
                await Task.Yield();
            }
        }

        var writer = Task.Run(WriterAsync);
        await Task.WhenAll(Enumerable.Range(0, 4).Select(_ => Task.Run(ReaderAsync)));
        await stop.CancelAsync();
        await writer;

        Assert.Equal(0, violations);
        Assert.True(writes > 0);
    }
}
