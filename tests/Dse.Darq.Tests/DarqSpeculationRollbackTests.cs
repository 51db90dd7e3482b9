namespace Dse.Darq.Tests;

/// <summary>
/// General speculation, what a rollback voids and what it keeps: an OUT message of a voided step was never delivered
/// (its delivery waiters are told so), and an entry that ends exactly where the rollback voids stays durable.
/// </summary>
public sealed class DarqSpeculationRollbackTests
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

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task EnsureDurable_EntryEndsWhereRollbackVoids_DoesNotReportKeptEntryRolledBack()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator));

        // B version 1 ends with "kept"; what B appends next depends on A's version that never persists.
        var kept = await b.EnqueueAsync(5, 1, "kept".Bytes(), guard.Token);
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.DseStateObject.WaitForCommitAsync(1, 0, guard.Token);
        await using (var a = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator)))
        {
            await a.EnqueueAsync("x".Bytes(), guard.Token);
            await a.DseStateObject!.StartLocalActionAsync(guard.Token);
            var fromA = a.DseStateObject.EndAction();
            await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "lost".Bytes()) { DseHeader = fromA.ToArray() }, guard.Token);
            aStorage.CrashNow();
        }

        // The rollback voids from kept's DurableAt on; the durable acknowledgement of "kept" still stands.
        await using var a2 = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator));
        await b.DseStateObject.RefreshAsync(guard.Token);
        Assert.Equal(1, b.DseStateObject.WorldLine);
        await b.EnsureDurableAsync(kept.DurableAt, guard.Token);
        Assert.Equal(1, b.UnconsumedCount);
    }
}
