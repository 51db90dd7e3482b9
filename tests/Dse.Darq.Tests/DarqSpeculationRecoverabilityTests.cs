namespace Dse.Darq.Tests;

/// <summary>
/// General speculation, what waits for recoverability: an OUT message to a DARQ outside the cluster leaves only once its
/// version is recoverable, and <see cref="Darq.WaitForRecoverableAsync"/> never waits for a version an idle DARQ will not
/// persist.
/// </summary>
public sealed class DarqSpeculationRecoverabilityTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

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
}
