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
        var fast = await RunWithOutAsync(holdWrites: false);
        var slow = await RunWithOutAsync(holdWrites: true);

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
    public async Task Step_LogDeviceFailedAndLogMemoryFull_FaultsTheTaskWithTheLogsErrorAndChangesNothing()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var message = await darq.EnqueueAsync("m".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        await darq.CommitAsync();

        // The log device fails for good: the pages the next enqueues close are never flushed, and the commit that covers
        // them fails, which FasterLog keeps and throws from every append that finds log memory full.
        storage.LogFaults!.FailPermanently();
        var filler = new byte[DarqTestStorage.PageSize / 8];
        for (int i = 0; i < 10; i++)
        {
            await darq.EnqueueAsync(filler);
        }

        var commit = await Record.ExceptionAsync(() => darq.CommitAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(30)));
        Assert.NotNull(commit);
        Exception? full = null;
        for (int i = 0; i < 100 && full is null; i++)
        {
            full = await Record.ExceptionAsync(() => darq.EnqueueAsync(filler).AsTask().WaitAsync(TimeSpan.FromSeconds(30)));
        }

        Assert.NotNull(full);
        long tail = darq.TailAddress;
        int unconsumed = darq.UnconsumedCount;

        // The consume-one fast path's append throws: the step is not thrown at the caller but faults its task, through the
        // general path, which appends again and gets the same error.
        var pending = processor.StepAsync(new DarqStep().Consume(message.Lsn));
        Assert.True(pending.IsFaulted);
        var error = await Assert.ThrowsAnyAsync<Exception>(() => pending.AsTask());
        Assert.Equal(full.GetType(), error.GetType());
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(unconsumed, darq.UnconsumedCount);

        // The gate was released: the next step is refused the same way rather than waiting forever.
        var again = processor.StepAsync(new DarqStep().Consume(message.Lsn));
        Assert.True(again.IsFaulted);
        Assert.Equal(unconsumed, darq.UnconsumedCount);
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

    [Theory]
    [InlineData(ConsumeOnlyPath.Batch)]
    [InlineData(ConsumeOnlyPath.Batch64)]
    [InlineData(ConsumeOnlyPath.SwappedPairBatches)]
    [InlineData(ConsumeOnlyPath.LogMemoryFull)]
    [InlineData(ConsumeOnlyPath.ConsumeApi)]
    [InlineData(ConsumeOnlyPath.ConsumeApiLogMemoryFull)]
    public async Task Step_ConsumeOnlyFastPath_AppendsWhatTheGeneralPathAppends(ConsumeOnlyPath other)
    {
        // Swapped pairs: the messages are consumed in the order 1, 0, 3, 2, ... by both runs.
        bool swapped = other == ConsumeOnlyPath.SwappedPairBatches;
        var fast = await RunConsumeOnlyAsync(ConsumeOnlyPath.Fast, swapped);
        var compared = await RunConsumeOnlyAsync(other, swapped);

        if (other is ConsumeOnlyPath.LogMemoryFull or ConsumeOnlyPath.ConsumeApiLogMemoryFull)
        {
            Assert.True(compared.SlowSteps >= 1, "expected steps that waited for log memory");
        }

        Assert.Equal(fast.Results, compared.Results);
        Assert.Equal(fast.Tail, compared.Tail);
        Assert.True(fast.Log.AsSpan().SequenceEqual(compared.Log), "the two runs' logs differ");
        Assert.Equal((0, 0), compared.Recovered);
        Assert.Equal(fast.Recovered, compared.Recovered);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Step_ConsumeOnlyRefused_SameReasonsAsAnyStepFaultsTheTaskAndChangesNothing(bool consumeApi)
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        var state = (await processor.StepAsync(new DarqStep().Consume(a.Lsn).AddSelf("s".Bytes()).AddOut("x", "o".Bytes()))).SelfLsns[0];
        long tail = darq.TailAddress;

        // The consume-only API (DarqProcessor.ConsumeAsync) or a consume-only DarqStep: the same refusals, as faulted tasks.
        Task Consume(long lsn, long incarnation, CancellationToken token = default)
        {
            Task pending = consumeApi
                ? darq.ConsumeAsync(incarnation, lsn, token).AsTask()
                : darq.StepAsync(incarnation, new DarqStep().Consume(lsn), token).AsTask();
            Assert.True(pending.IsCompleted, $"consuming {lsn} should complete at once");
            return pending;
        }

        foreach (var (lsn, reason) in new[]
        {
            (a.Lsn, DarqStepRejection.AlreadyConsumed),
            (tail + 64, DarqStepRejection.UnknownMessage),
            (-8L, DarqStepRejection.UnknownMessage),
            (state + DarqEntryFormat.LogFootprint(DarqEntryFormat.SelfLength(1)), DarqStepRejection.NotSteppable),
        })
        {
            var error = await Assert.ThrowsAsync<DarqStepRejectedException>(() => Consume(lsn, processor.Incarnation));
            Assert.Equal(reason, error.Reason);
            Assert.Equal(new DarqStepRejectedException(darq.Name, lsn, reason).Message, error.Message);
        }

        var stale = await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => Consume(state, processor.Incarnation - 1));
        Assert.Equal(processor.Incarnation, stale.CurrentIncarnation);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => Consume(state, processor.Incarnation, new CancellationToken(canceled: true)));
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);

        // Nothing was held (the gate, the message): the SELF message is still there to consume.
        long completion = consumeApi
            ? (await processor.ConsumeAsync(state)).CompletionLsn
            : (await processor.StepAsync(new DarqStep().Consume(state))).CompletionLsn;
        Assert.Equal(tail, completion);
        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Consume_GateTaken_WaitsThenAppendsAfterWhatHeldTheGate()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var b = await darq.EnqueueAsync("b".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        await processor.StepAsync(new DarqStep().Consume(a.Lsn).AddSelf("s".Bytes()));

        // A checkpoint holds the gate while its snapshot function runs; a consume issued meanwhile waits for the gate.
        using var inSnapshot = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        var checkpoint = Task.Run(() => processor.CheckpointAsync(_ =>
        {
            inSnapshot.Set();
            Assert.True(release.Wait(TimeSpan.FromSeconds(30)));
            return [];
        }).AsTask());
        Assert.True(inSnapshot.Wait(TimeSpan.FromSeconds(30)));
        var pending = processor.ConsumeAsync(b.Lsn);
        Assert.False(pending.IsCompleted);
        release.Set();
        var replaced = await checkpoint.WaitAsync(TimeSpan.FromSeconds(30));
        var consumed = await pending.AsTask().WaitAsync(TimeSpan.FromSeconds(30));

        Assert.Equal(replaced.DurableAt, consumed.CompletionLsn);
        Assert.Equal(darq.TailAddress, consumed.DurableAt);
        Assert.Equal(0, darq.UnconsumedCount);
    }

    /// <summary>How <see cref="RunConsumeOnlyAsync"/> steps.</summary>
    public enum ConsumeOnlyPath
    {
        /// <summary>Single steps, each appended synchronously without the general path's entry buffer.</summary>
        Fast,

        /// <summary>Batches of one step (each a consume-only batch).</summary>
        Batch,

        /// <summary>Batches of 64 steps in rising LSN order (the consume-only batch path, several FasterLog batches per page).</summary>
        Batch64,

        /// <summary>Batches of two steps whose LSNs fall (the general batch path: a step below an earlier one of its batch).</summary>
        SwappedPairBatches,

        /// <summary>Single steps with the log's writes held, so that log memory fills and steps wait for it.</summary>
        LogMemoryFull,

        /// <summary>Single steps through the consume-only API (<see cref="DarqProcessor.ConsumeAsync(long, CancellationToken)"/>).</summary>
        ConsumeApi,

        /// <summary>The consume-only API with the log's writes held, so that log memory fills and steps wait for it.</summary>
        ConsumeApiLogMemoryFull,
    }

    /// <summary>Enqueues small messages, then consumes each with a step of its own, <paramref name="path"/>'s way.</summary>
    private static Task<RunResult> RunConsumeOnlyAsync(ConsumeOnlyPath path, bool swapPairs = false) =>
        RunAsync(8_000, holdWrites: path is ConsumeOnlyPath.LogMemoryFull or ConsumeOnlyPath.ConsumeApiLogMemoryFull, async run =>
        {
            var step = new DarqStep();
            var lsns = run.Lsns.ToList();
            if (swapPairs)
            {
                for (int i = 0; i + 1 < lsns.Count; i += 2)
                {
                    (lsns[i], lsns[i + 1]) = (lsns[i + 1], lsns[i]);
                }
            }

            if (path is ConsumeOnlyPath.Batch64 or ConsumeOnlyPath.SwappedPairBatches)
            {
                int size = path == ConsumeOnlyPath.Batch64 ? 64 : 2;
                var pool = Enumerable.Range(0, size).Select(_ => new DarqStep()).ToArray();
                for (int start = 0; start < lsns.Count; start += size)
                {
                    var batch = lsns.Skip(start).Take(size).Select((lsn, i) => pool[i].Clear().Consume(lsn)).ToList();
                    foreach (var result in await run.Processor.StepBatchAsync(batch))
                    {
                        run.Results.Add((-1, result.CompletionLsn, result.DurableAt));
                    }
                }

                return;
            }

            if (path is ConsumeOnlyPath.ConsumeApi or ConsumeOnlyPath.ConsumeApiLogMemoryFull)
            {
                foreach (long lsn in lsns)
                {
                    var pending = run.Processor.ConsumeAsync(lsn);
                    if (!pending.IsCompleted)
                    {
                        run.SlowSteps++;
                        run.Device.Release();
                    }

                    var consumed = await pending.AsTask().WaitAsync(TimeSpan.FromSeconds(30));
                    run.Results.Add((-1, consumed.CompletionLsn, consumed.DurableAt));
                }

                return;
            }

            foreach (long lsn in lsns)
            {
                DarqStepResult result;
                if (path == ConsumeOnlyPath.Batch)
                {
                    result = (await run.Processor.StepBatchAsync([step.Clear().Consume(lsn)]))[0];
                }
                else
                {
                    // With held writes, the four pages fill up with the 8,000 completion records (52 bytes of log each).
                    var pending = run.Processor.StepAsync(step.Clear().Consume(lsn));
                    if (!pending.IsCompleted)
                    {
                        run.SlowSteps++;
                        run.Device.Release();
                    }

                    result = await pending.AsTask().WaitAsync(TimeSpan.FromSeconds(30));
                }

                Assert.Empty(result.SelfLsns);
                Assert.Empty(result.OutLsns);
                run.Results.Add((-1, result.CompletionLsn, result.DurableAt));
            }
        });

    /// <summary>
    /// Steps every message with one 8 KB OUT. With held writes, the log memory fills and a step waits for it (holding
    /// the gate), and the next step, issued meanwhile, waits for the gate.
    /// </summary>
    private static Task<RunResult> RunWithOutAsync(bool holdWrites) => RunAsync(Messages, holdWrites, async run =>
    {
        var payload = new byte[OutBytes];
        new Random(11).NextBytes(payload);
        var lsns = run.Lsns;
        var step = new DarqStep();
        for (int i = 0; i < lsns.Count; i++)
        {
            var pending = run.Processor.StepAsync(step.Clear().Consume(lsns[i]).AddOut("sink", payload));
            if (!pending.IsCompleted)
            {
                // FasterLog had no room (log memory full, or a page turn): this step holds the gate while it waits
                // for log memory, so the next one finds the gate taken.
                run.SlowSteps++;

                // The waiting step was validated and formatted before it waited: changing the step object now must
                // not change what is applied once it is appended.
                step.Clear().Consume(lsns[^1]);
                i++;
                var next = run.Processor.StepAsync(new DarqStep().Consume(lsns[i]).AddOut("sink", payload));
                run.SlowSteps += next.IsCompleted ? 0 : 1;
                run.Device.Release();
                run.Results.Add(ToTuple(await pending.AsTask().WaitAsync(TimeSpan.FromSeconds(30))));
                run.Results.Add(ToTuple(await next.AsTask().WaitAsync(TimeSpan.FromSeconds(30))));
                continue;
            }

            run.Results.Add(ToTuple(await pending));
        }

        static (long, long, long) ToTuple(DarqStepResult result) => (result.OutLsns[0], result.CompletionLsn, result.DurableAt);
    });

    /// <summary>
    /// Enqueues <paramref name="messages"/> small messages and commits them, registers a processor, holds the log's writes
    /// when asked (so that four pages of log memory fill up and steps wait for it; otherwise the run has room), lets
    /// <paramref name="stepAll"/> step, then releases the writes, commits, reads the log back and reopens it.
    /// </summary>
    private static async Task<RunResult> RunAsync(int messages, bool holdWrites, Func<StepRun, Task> stepAll)
    {
        var logStorage = new InMemoryStorage();
        var commitStorage = new InMemoryStorage();
        var device = new HoldingDevice(DseDevices.CreateInMemory(logStorage));
        var options = DarqTestStorage.Options(device, DseDevices.CreateInMemory(commitStorage));
        options.MemorySize = holdWrites ? 4 * DarqTestStorage.PageSize : 64 * DarqTestStorage.PageSize;
        StepRun run;
        long tail;
        await using (var darq = await Darq.OpenAsync(options))
        {
            var lsns = new List<long>();
            for (int i = 0; i < messages; i++)
            {
                lsns.Add((await darq.EnqueueAsync(BitConverter.GetBytes(i))).Lsn);
            }

            run = new StepRun(await darq.RegisterProcessorAsync(), lsns, device);
            await darq.CommitAsync();
            if (holdWrites)
            {
                device.Hold();
            }

            await stepAll(run);
            device.Release();
            await darq.CommitAsync();
            tail = darq.TailAddress;
        }

        var log = ReadLog(logStorage, tail);
        await using var recovered = await Darq.OpenAsync(
            DarqTestStorage.Options(DseDevices.CreateInMemory(logStorage), DseDevices.CreateInMemory(commitStorage)));
        return new RunResult(run.Results, tail, log, run.SlowSteps, (recovered.UnconsumedCount, recovered.PendingOutCount));
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

    /// <summary>What a run's stepping sees and reports: the processor, the messages' LSNs, the log device, and the results.</summary>
    private sealed class StepRun(DarqProcessor processor, List<long> lsns, HoldingDevice device)
    {
        public DarqProcessor Processor => processor;

        public List<long> Lsns => lsns;

        public HoldingDevice Device => device;

        public List<(long Out, long Completion, long DurableAt)> Results { get; } = [];

        public int SlowSteps { get; set; }
    }

    private sealed record RunResult(List<(long Out, long Completion, long DurableAt)> Results, long Tail, byte[] Log, int SlowSteps,
        (int Unconsumed, int PendingOut) Recovered);
}
