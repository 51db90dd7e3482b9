namespace Dse.Darq.Tests;

/// <summary>Regression tests for the review of DARQ general speculation (rollback corner cases).</summary>
public sealed class DarqSpeculationReviewTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task WaitForDelivered_OutVoidedByRollback_ThrowsRolledBack()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();

        // B's OUT goes to a destination nobody serves: it stays pending until the rollback voids it.
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator, new TestDestinations()));
        Task delivered;
        await using (var a = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator)))
        {
            // B steps a message from A's version that never persists, producing an OUT message.
            await a.EnqueueAsync("x".Bytes(), guard.Token);
            await a.DseStateObject!.StartLocalActionAsync(guard.Token);
            var fromA = a.DseStateObject.EndAction();
            await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "from-a".Bytes()) { DseHeader = fromA.ToArray() }, guard.Token);
            var processor = await b.RegisterProcessorAsync(guard.Token);
            var message = await processor.Messages.ReadAsync(guard.Token);
            var step = await processor.StepAsync(new DarqStep().Consume(message.Lsn).AddOut("nowhere", "y".Bytes()), guard.Token);
            delivered = b.WaitForDeliveredAsync(step.OutLsns[0], guard.Token).AsTask();
            Assert.False(delivered.IsCompleted);
            aStorage.CrashNow();
        }

        // A's restart rolls B back: the step and its OUT message never happened, so it was never delivered either.
        await using var a2 = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator));
        await b.DseStateObject!.RefreshAsync(guard.Token);
        Assert.Equal(1, b.DseStateObject.WorldLine);
        Assert.Equal(0, b.PendingOutCount);
        await Assert.ThrowsAsync<DseRolledBackException>(() => delivered.WaitAsync(guard.Token));
    }
}
