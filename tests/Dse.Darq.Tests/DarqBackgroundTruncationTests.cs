namespace Dse.Darq.Tests;

/// <summary>
/// The commit loop's truncation (<see cref="DarqOptions.AutoTruncate"/>) cuts only what log memory no longer holds, at a
/// recorded step start, so that FasterLog's clearing of closed pages stays off the stepping thread; an explicit
/// <see cref="Darq.TruncateAsync"/> still cuts the whole completed prefix.
/// </summary>
[Trait("Category", "Recovery")]
public sealed class DarqBackgroundTruncationTests
{
    private static readonly TimeSpan Deadline = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task CommitLoop_CompletedPrefixStillInLogMemory_KeepsIt_TruncateAsyncCutsIt()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o => o.CommitInterval = TimeSpan.FromMilliseconds(1));
        long begin = darq.BeginAddress;
        var processor = await darq.RegisterProcessorAsync();
        await EnqueueAndConsumeAsync(darq, processor, 20);

        // Two commits by the loop after the last step: the second one's truncation ran after every step.
        await darq.WaitForCommitAsync(darq.TailAddress);
        await EnqueueAndConsumeAsync(darq, processor, 1);
        await darq.WaitForCommitAsync(darq.TailAddress);

        Assert.True(darq.TailAddress < DarqTestStorage.PageSize * 4, "the whole log is within log memory");
        Assert.Equal(begin, darq.BeginAddress);

        Assert.Equal(darq.TailAddress, await darq.TruncateAsync());
    }

    [Fact]
    public async Task CommitLoop_CompletedPrefixBeyondLogMemory_CutsBelowMemoryAtAStepStartThatReopens()
    {
        var storage = new DarqTestStorage();
        long memory = DarqTestStorage.PageSize * 4;
        long oldest;
        await using (var darq = await storage.OpenAsync(o => o.CommitInterval = TimeSpan.FromMilliseconds(1)))
        {
            var processor = await darq.RegisterProcessorAsync();

            // A message left unconsumed holds the cut at its own step however far the log goes on.
            oldest = (await darq.EnqueueAsync("oldest".Bytes())).Lsn;
            Assert.Equal(["oldest"], processor.Drain().Select(m => m.Text()));
            await EnqueueAndConsumeAsync(darq, processor, 600, payloadBytes: 1000);
            Assert.True(darq.TailAddress > 2 * memory);
            await darq.WaitForCommitAsync(darq.TailAddress);
            await EnqueueAndConsumeAsync(darq, processor, 1);
            await darq.WaitForCommitAsync(darq.TailAddress);
            Assert.Equal(oldest, darq.BeginAddress);

            // Consumed: the loop cuts past it, but not into the last MemorySize bytes.
            await processor.StepAsync(new DarqStep().Consume(oldest));
            long tail = darq.TailAddress;
            using var deadline = new CancellationTokenSource(Deadline);
            while (darq.BeginAddress <= oldest)
            {
                await Task.Delay(1, deadline.Token);
            }

            Assert.InRange(darq.BeginAddress, oldest + 1, tail - memory);
            await darq.CommitAsync();
            storage.CrashNow();
        }

        // The cut is a step start: the DARQ reopens from it with nothing pending and takes new work.
        await using var reopened = await storage.OpenAsync();
        Assert.InRange(reopened.BeginAddress, oldest + 1, reopened.TailAddress - memory);
        Assert.Equal(0, reopened.UnconsumedCount);
        var recovered = await reopened.RegisterProcessorAsync();
        Assert.Empty(recovered.Drain());
        await reopened.EnqueueAsync("after".Bytes());
        Assert.Equal(["after"], recovered.Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task CommitLoop_RestoreVoidedStepStartsBelowMemory_CutsOnlyAtAStepStartOfTheRestoredState()
    {
        using var guard = new CancellationTokenSource(Deadline);
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();
        var bStorage = new DarqTestStorage();
        long memory = DarqTestStorage.PageSize * 4;
        long from;
        long marker;
        await using (var b = await bStorage.OpenAsync(GeneralWithCommitLoop("b", 2, coordinator)))
        {
            long begin = b.BeginAddress;
            var processor = await b.RegisterProcessorAsync(guard.Token);

            // B version 1, committed: more than a page of completed steps (a step start to cut at), then "kept".
            await EnqueueAndConsumeAsync(b, processor, 100, payloadBytes: 1000);
            await b.EnqueueAsync("kept".Bytes(), guard.Token);
            Assert.Equal(["kept"], processor.Drain().Select(m => m.Text()));
            await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
            await b.DseStateObject.WaitForCommitAsync(1, 0, guard.Token);
            from = b.TailAddress;

            // B version 2 depends on A's version that never persists, and records step starts over more than log memory.
            await using (var a = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator)))
            {
                await a.EnqueueAsync("a".Bytes(), guard.Token);
                await a.DseStateObject!.StartLocalActionAsync(guard.Token);
                var fromA = a.DseStateObject.EndAction();
                await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "lost".Bytes()) { DseHeader = fromA.ToArray() }, guard.Token);
                Assert.Equal(["lost"], processor.Drain().Select(m => m.Text()));
                await EnqueueAndConsumeAsync(b, processor, 400, payloadBytes: 1000);
                await b.DseStateObject.AdvanceVersionAsync(guard.Token);
                marker = b.TailAddress;
                Assert.True(marker - from > memory, "version 2 spans more than log memory");
                aStorage.CrashNow();
            }

            // A lost its version: B restores version 1, the ROLLBACK entry voids [from, marker).
            await using var a2 = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator));
            await b.DseStateObject.RefreshAsync(guard.Token);
            Assert.Equal(1, b.DseStateObject.WorldLine);
            var restored = await b.RegisterProcessorAsync(guard.Token);
            var kept = Assert.Single(restored.Drain());
            Assert.Equal("kept", kept.Text());

            // Less than log memory of new work, committed by the coordinator: the truncation limit moves past the ROLLBACK
            // entry, and the last MemorySize bytes below the tail begin inside the voided range.
            await restored.StepAsync(new DarqStep().Consume(kept), guard.Token);
            await EnqueueAndConsumeAsync(b, restored, 100, payloadBytes: 1000);
            await b.EnqueueAsync("after".Bytes(), guard.Token);
            Assert.Equal(["after"], restored.Drain().Select(m => m.Text()));
            long version = b.DseStateObject.CurrentVersion;
            await b.DseStateObject.AdvanceVersionAsync(guard.Token);
            await b.DseStateObject.WaitForCommitAsync(version, 1, guard.Token);
            Assert.InRange(b.TailAddress - memory, from + 1, marker - 1);

            // The loop cuts at the last valid step start below memory: one of version 1's, before the voided range.
            while (b.BeginAddress == begin)
            {
                await Task.Delay(1, guard.Token);
            }

            Assert.True(b.BeginAddress < from, $"the commit loop cut at {b.BeginAddress}, inside the voided range [{from}, {marker})");
            await b.CommitAsync(guard.Token);
            bStorage.CrashNow();
        }

        // The cut is a step start of the restored state: B reopens from it with only "after" pending.
        await using var reopened = await bStorage.OpenAsync(DarqGeneralSpeculationTests.General("b", 2, new ClusterCoordinator()));
        Assert.InRange(reopened.BeginAddress, 0, from - 1);
        Assert.Equal(["after"], (await reopened.RegisterProcessorAsync(guard.Token)).Drain().Select(m => m.Text()));
    }

    private static Action<DarqOptions> GeneralWithCommitLoop(string name, long id, ClusterCoordinator coordinator) => o =>
    {
        DarqGeneralSpeculationTests.General(name, id, coordinator)(o);
        o.CommitInterval = TimeSpan.FromMilliseconds(1);
    };

    private static async Task EnqueueAndConsumeAsync(Darq darq, DarqProcessor processor, int count, int payloadBytes = 8)
    {
        var step = new DarqStep();
        for (int i = 0; i < count; i++)
        {
            long lsn = (await darq.EnqueueAsync(new byte[payloadBytes])).Lsn;
            var message = Assert.Single(processor.Drain());
            Assert.Equal(lsn, message.Lsn);
            await processor.StepAsync(step.Clear().Consume(message));
        }
    }
}
