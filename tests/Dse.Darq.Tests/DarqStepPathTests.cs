using Dse.Storage;

namespace Dse.Darq.Tests;

/// <summary>
/// A step completes synchronously when the gate is free and log memory has room (the fast path), and otherwise waits
/// (for the gate, or for log memory); both paths must append exactly the same entries.
/// </summary>
public sealed class DarqStepPathTests
{
    private const int Messages = 48;
    private const int OutBytes = 8 * 1024;

    [Fact]
    public async Task Step_LogMemoryFullAndGateTaken_AppendsSameEntriesAsFastPath()
    {
        var fast = await RunAsync(holdWrites: false);
        var slow = await RunAsync(holdWrites: true);

        Assert.True(slow.SlowSteps >= 2, $"expected steps that waited for log memory and for the gate, saw {slow.SlowSteps}");
        Assert.Equal(fast.Results, slow.Results);
        Assert.Equal(fast.Tail, slow.Tail);
        Assert.True(fast.Log.AsSpan().SequenceEqual(slow.Log), "the two runs' logs differ");
        Assert.Equal((0, Messages), slow.Recovered);
        Assert.Equal(fast.Recovered, slow.Recovered);
    }

    [Fact]
    public async Task Step_RefusedOnFastPath_FaultsTheTaskInsteadOfThrowing()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        long tail = darq.TailAddress;

        var pending = processor.StepAsync(new DarqStep().Consume(a.Lsn + 1).AddOut("x", "o".Bytes()));

        Assert.True(pending.IsFaulted);
        var error = await Assert.ThrowsAsync<DarqStepRejectedException>(() => pending.AsTask());
        Assert.Equal(DarqStepRejection.UnknownMessage, error.Reason);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(0, darq.PendingOutCount);

        // The gate was released: the next step goes through.
        await processor.StepAsync(new DarqStep().Consume(a.Lsn));
        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Step_ReusedStepObject_SameResultsAsNewSteps()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var b = await darq.EnqueueAsync("b".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        var step = new DarqStep();

        var first = await processor.StepAsync(step.Consume(a.Lsn).AddSelf("s".Bytes()).AddOut("x", "o".Bytes()));
        var second = await processor.StepAsync(step.Clear().Consume(b.Lsn).AddOut("y", "p".Bytes()));

        Assert.Single(first.SelfLsns);
        Assert.Empty(second.SelfLsns);
        Assert.Single(second.OutLsns);
        Assert.Equal(1, darq.UnconsumedCount); // the SELF message of the first step
        Assert.Equal(2, darq.PendingOutCount);
        Assert.True(step.Clear().IsEmpty);
    }

    /// <summary>
    /// Steps every message with one 8 KB OUT. With held writes, the log memory fills and a step waits for it (holding
    /// the gate), and the next step, issued meanwhile, waits for the gate.
    /// </summary>
    private static async Task<RunResult> RunAsync(bool holdWrites)
    {
        var logStorage = new InMemoryStorage();
        var commitStorage = new InMemoryStorage();
        var device = new HoldingDevice(DseDevices.CreateInMemory(logStorage));
        var options = DarqTestStorage.Options(device, DseDevices.CreateInMemory(commitStorage));

        // Without held writes, room for the whole run (steps rarely wait, only when FasterLog is at a page turn); with
        // them, four pages fill up and steps must wait.
        options.MemorySize = holdWrites ? 4 * DarqTestStorage.PageSize : 64 * DarqTestStorage.PageSize;
        var results = new List<(long Out, long Completion, long DurableAt)>();
        var payload = new byte[OutBytes];
        new Random(11).NextBytes(payload);
        int slowSteps = 0;
        long tail;
        await using (var darq = await Darq.OpenAsync(options))
        {
            var lsns = new List<long>();
            for (int i = 0; i < Messages; i++)
            {
                lsns.Add((await darq.EnqueueAsync(BitConverter.GetBytes(i))).Lsn);
            }

            var processor = await darq.RegisterProcessorAsync();
            await darq.CommitAsync();
            if (holdWrites)
            {
                device.Hold();
            }

            var step = new DarqStep();
            for (int i = 0; i < Messages; i++)
            {
                var pending = processor.StepAsync(step.Clear().Consume(lsns[i]).AddOut("sink", payload));
                if (!pending.IsCompleted)
                {
                    // FasterLog had no room (log memory full, or a page turn): this step holds the gate while it waits
                    // for log memory, so the next one finds the gate taken.
                    slowSteps++;

                    // The waiting step was validated and formatted before it waited: changing the step object now must
                    // not change what is applied once it is appended.
                    step.Clear().Consume(lsns[Messages - 1]);
                    i++;
                    var next = processor.StepAsync(new DarqStep().Consume(lsns[i]).AddOut("sink", payload));
                    slowSteps += next.IsCompleted ? 0 : 1;
                    device.Release();
                    results.Add(ToTuple(await pending.AsTask().WaitAsync(TimeSpan.FromSeconds(30))));
                    results.Add(ToTuple(await next.AsTask().WaitAsync(TimeSpan.FromSeconds(30))));
                    continue;
                }

                results.Add(ToTuple(await pending));
            }

            device.Release();
            await darq.CommitAsync();
            tail = darq.TailAddress;
        }

        var log = ReadLog(logStorage, tail);
        await using var recovered = await Darq.OpenAsync(
            DarqTestStorage.Options(DseDevices.CreateInMemory(logStorage), DseDevices.CreateInMemory(commitStorage)));
        return new RunResult(results, tail, log, slowSteps, (recovered.UnconsumedCount, recovered.PendingOutCount));

        static (long, long, long) ToTuple(DarqStepResult result) => (result.OutLsns[0], result.CompletionLsn, result.DurableAt);
    }

    private static byte[] ReadLog(InMemoryStorage storage, long tail)
    {
        var bytes = new byte[tail];
        for (long address = 0; address < tail; address += DarqTestStorage.SegmentSize)
        {
            int length = (int)Math.Min(DarqTestStorage.SegmentSize, tail - address);
            Assert.True(storage.TryRead((int)(address / DarqTestStorage.SegmentSize), 0, bytes.AsSpan((int)address, length)),
                $"log segment {address / DarqTestStorage.SegmentSize} is missing");
        }

        return bytes;
    }

    private sealed record RunResult(List<(long Out, long Completion, long DurableAt)> Results, long Tail, byte[] Log, int SlowSteps,
        (int Unconsumed, int PendingOut) Recovered);
}
