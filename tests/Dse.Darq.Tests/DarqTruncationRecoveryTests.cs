namespace Dse.Darq.Tests;

/// <summary>Truncation keeps whole steps, so a truncated DARQ always reopens.</summary>
[Trait("Category", "Recovery")]
public sealed class DarqTruncationRecoveryTests
{
    [Fact]
    public async Task Truncate_OldestPendingIsSecondSelfOfItsStep_TruncatesToStepStartAndReopens()
    {
        var storage = new DarqTestStorage();
        long s1, s2;
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            var first = await processor.StepAsync(new DarqStep().AddSelf("s1".Bytes()).AddSelf("s2".Bytes()));
            (s1, s2) = (first.SelfLsns[0], first.SelfLsns[1]);
            await processor.StepAsync(new DarqStep().Consume(s1));

            // s2 is the oldest pending entry, but its step starts at s1: the begin address must not split the step.
            Assert.Equal(s1, await darq.TruncateAsync());
        }

        await using (var reopened = await storage.OpenAsync())
        {
            Assert.Equal(s1, reopened.BeginAddress);
            var processor = await reopened.RegisterProcessorAsync();
            Assert.Equal([(s2, "s2")], processor.Drain().Select(m => (m.Lsn, m.Text())));
            var consumedAgain = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepAsync(new DarqStep().Consume(s1)).AsTask());
            Assert.Equal(DarqStepRejection.AlreadyConsumed, consumedAgain.Reason);
            await processor.StepAsync(new DarqStep().Consume(s2));
            Assert.Equal(reopened.TailAddress, await reopened.TruncateAsync());
        }

        await using var again = await storage.OpenAsync();
        Assert.Equal(0, again.UnconsumedCount);
        Assert.Equal(again.TailAddress, again.BeginAddress);
    }

    [Fact]
    public async Task Truncate_PendingOutAfterItsConsumedSelf_KeepsTheWholeStepAndReopens()
    {
        var storage = new DarqTestStorage();
        long state1, outLsn;
        await using (var darq = await storage.OpenAsync())
        {
            var a = await darq.EnqueueAsync("a".Bytes());
            var processor = await darq.RegisterProcessorAsync();
            var first = await processor.StepAsync(new DarqStep().Consume(a.Lsn).AddSelf("state1".Bytes()).AddOut("next", "o".Bytes()));
            (state1, outLsn) = (first.SelfLsns[0], first.OutLsns[0]);
            await processor.StepAsync(new DarqStep().Consume(state1).AddSelf("state2".Bytes()));

            // The OUT entry is pending; its step starts at the (consumed) state1.
            Assert.Equal(state1, await darq.TruncateAsync());
        }

        await using var reopened = await storage.OpenAsync();
        var recovered = await reopened.RegisterProcessorAsync();
        Assert.Equal(["state2"], recovered.Drain().Select(m => m.Text()));
        var notSteppable = await Assert.ThrowsAsync<DarqStepRejectedException>(() => recovered.StepAsync(new DarqStep().Consume(outLsn)).AsTask());
        Assert.Equal(DarqStepRejection.NotSteppable, notSteppable.Reason);
        Assert.Equal(state1, await reopened.TruncateAsync());
    }

    [Fact]
    public async Task Truncate_AfterEachStateAndOutStep_EveryTruncatedLogReopens()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            long state = (await processor.StepAsync(new DarqStep().AddSelf("state0".Bytes()).AddOut("x", "o0".Bytes()))).SelfLsns[0];
            for (int i = 1; i <= 20; i++)
            {
                // Each step replaces the SELF state and sends one OUT, so the oldest pending entry is always an OUT
                // whose step's SELF is consumed; each truncation point must still reopen.
                var result = await processor.StepAsync(new DarqStep().Consume(state).AddSelf($"state{i}".Bytes()).AddOut("x", $"o{i}".Bytes()));
                state = result.SelfLsns[0];
                await darq.TruncateAsync();

                await using var copy = await storage.Snapshot().OpenAsync();
                Assert.Equal([$"state{i}"], (await copy.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
            }
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(["state20"], (await reopened.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Truncate_ToMidPageTailThenAppendAcrossPages_ReopensWithEverything()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            var a = await darq.EnqueueAsync("a".Bytes());
            var processor = await darq.RegisterProcessorAsync();
            await processor.StepAsync(new DarqStep().Consume(a.Lsn));
            await darq.TruncateAsync();
            for (int i = 0; i < 40; i++)
            {
                await darq.EnqueueAsync(new byte[3000]);
            }

            await darq.EnqueueAsync("z".Bytes());
            await darq.CommitAsync();
            storage.CrashNow();
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal(41, reopened.UnconsumedCount);
    }
}
