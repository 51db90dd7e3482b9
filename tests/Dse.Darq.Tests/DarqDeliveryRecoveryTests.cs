namespace Dse.Darq.Tests;

/// <summary>OUT delivery across crashes of the source or the destination: exactly once, reopening the same storage.</summary>
[Trait("Category", "Recovery")]
public sealed class DarqDeliveryRecoveryTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Deliver_SourceCrashBeforeAckCommitted_ResendIsDeduplicated()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        var sourceStorage = new DarqTestStorage();
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        destinations.Registry.Add(b);
        long outLsn;
        await using (var a = await sourceStorage.OpenAsync(DarqDeliveryTests.Source("a", destinations)))
        {
            var processor = await a.RegisterProcessorAsync();
            outLsn = (await processor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()))).OutLsns[0];
            await a.CommitAsync();
            await a.WaitForDeliveredAsync(outLsn, guard.Token);

            // Delivered and acknowledged in memory; the ACK entry never reaches storage.
            sourceStorage.CrashNow();
        }

        await using (var reopened = await sourceStorage.OpenAsync(DarqDeliveryTests.Source("a", destinations)))
        {
            await reopened.WaitForDeliveredAsync(outLsn, guard.Token);
            Assert.Equal(0, reopened.PendingOutCount);
        }

        Assert.Equal(2, destinations.Acknowledged);
        Assert.Equal(["x"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Deliver_DestinationClosedThenReopened_IsDeliveredOnce()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        var destinationStorage = new DarqTestStorage();
        var b = await destinationStorage.OpenAsync(DarqDeliveryTests.Named("b"));
        destinations.Registry.Add(b);
        await b.DisposeAsync();

        await using var a = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Source("a", destinations));
        var processor = await a.RegisterProcessorAsync();
        long outLsn = (await processor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()))).OutLsns[0];
        await a.CommitAsync();
        await destinations.Failed.WaitAsync(guard.Token);
        Assert.Equal(1, a.PendingOutCount);

        await using (var reopened = await destinationStorage.OpenAsync(DarqDeliveryTests.Named("b")))
        {
            destinations.Registry.Add(reopened);
            await a.WaitForDeliveredAsync(outLsn, guard.Token);
        }

        await using var again = await destinationStorage.OpenAsync(DarqDeliveryTests.Named("b"));
        Assert.Equal(["x"], (await again.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Truncate_AfterAck_FreesTheStepAndNothingIsResentAfterRestart()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        var sourceStorage = new DarqTestStorage();
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        destinations.Registry.Add(b);
        await using (var a = await sourceStorage.OpenAsync(DarqDeliveryTests.Source("a", destinations)))
        {
            var input = await a.EnqueueAsync("in".Bytes());
            var processor = await a.RegisterProcessorAsync();
            var step = await processor.StepAsync(new DarqStep().Consume(input.Lsn).AddOut("b", "x".Bytes()));
            await a.CommitAsync();
            await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);
            Assert.Equal(a.TailAddress, await a.TruncateAsync());
        }

        var counting = new TestDestinations();
        counting.Registry.Add(b);
        await using (var reopened = await sourceStorage.OpenAsync(DarqDeliveryTests.Source("a", counting)))
        {
            Assert.Equal(0, reopened.PendingOutCount);
            Assert.Equal(reopened.TailAddress, reopened.BeginAddress);
        }

        Assert.Equal(0, counting.Attempts);
        Assert.Equal(["x"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Reopen_AckEntriesInTheLog_RestoresOnlyUnacknowledgedOut()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        var sourceStorage = new DarqTestStorage();
        long delivered, pending;
        await using (var a = await sourceStorage.OpenAsync(DarqDeliveryTests.Source("a", destinations)))
        {
            await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
            destinations.Registry.Add(b);
            var processor = await a.RegisterProcessorAsync();
            var step = await processor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()).AddOut("c", "y".Bytes()));
            (delivered, pending) = (step.OutLsns[0], step.OutLsns[1]);
            await a.CommitAsync();
            await a.WaitForDeliveredAsync(delivered, guard.Token);
            await a.CommitAsync();
        }

        await using var reopened = await sourceStorage.OpenAsync(DarqDeliveryTests.Named("a"));
        Assert.Equal(1, reopened.PendingOutCount);
        Assert.Equal(delivered, await reopened.TruncateAsync());
        await reopened.WaitForDeliveredAsync(delivered, guard.Token);
        Assert.NotEqual(delivered, pending);
    }
}
