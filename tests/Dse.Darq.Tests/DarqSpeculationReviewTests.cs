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

    [Fact]
    public async Task Deliver_GeneralSourceToNonSpeculativeDestination_SendsOnlyOnceRecoverable()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var registry = new DarqDestinationRegistry();

        // B is outside the LibDse cluster (intra-participant speculation): whatever it receives it keeps, whatever the
        // source later rolls back. C is a cluster member.
        await using var b = await new DarqTestStorage().OpenAsync(o => o.Name = "b");
        await using var c = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("c", 3, coordinator));
        registry.Add(b);
        registry.Add(c);
        await using var a = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator, registry));
        var bProcessor = await b.RegisterProcessorAsync(guard.Token);
        var cProcessor = await c.RegisterProcessorAsync(guard.Token);
        var aProcessor = await a.RegisterProcessorAsync(guard.Token);

        // One step, two OUT messages in LSN order: to B first, then to C.
        var step = await aProcessor.StepAsync(new DarqStep().AddOut("b", "to-b".Bytes()).AddOut("c", "to-c".Bytes()), guard.Token);

        // C gets its message speculatively, so the delivery loop has been past B's: B must not have it yet, since A's
        // version is not recoverable and B would keep the message through a rollback of A.
        Assert.Equal("to-c", (await cProcessor.Messages.ReadAsync(guard.Token)).Text());
        Assert.False(bProcessor.Messages.TryRead(out _));
        await a.WaitForDeliveredAsync(step.OutLsns[1], guard.Token);
        Assert.Equal(1, a.PendingOutCount);

        // Once A's version (which depends on C's through the acknowledgement) is committed, B gets it.
        await c.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
        Assert.Equal("to-b", (await bProcessor.Messages.ReadAsync(guard.Token)).Text());
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);
        Assert.Equal(0, a.PendingOutCount);
    }

    [Fact]
    public async Task WaitForRecoverable_DurableAtOfLastEntryInPersistedVersion_CompletesWithoutLaterVersion()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator));
        var enqueued = await b.EnqueueAsync("m".Bytes(), guard.Token);
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.DseStateObject.WaitForCommitAsync(1, 0, guard.Token);

        // Version 1 ends exactly at DurableAt and nothing follows: the barrier must not wait for a version 2 that an
        // idle DARQ never persists.
        await b.WaitForRecoverableAsync(enqueued.DurableAt, guard.Token);
        Assert.Equal(2, b.DseStateObject.CurrentVersion);
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
