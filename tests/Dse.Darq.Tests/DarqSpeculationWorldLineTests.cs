namespace Dse.Darq.Tests;

/// <summary>
/// General speculation across world-lines: an OUT entry that survived every rollback but was not delivered before the
/// cluster moved to a new world-line must still leave (found by <see cref="DarqGeneralSpeculationPipelineTests"/>).
/// </summary>
[Trait("Category", "Recovery")]
public sealed class DarqSpeculationWorldLineTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task Deliver_PendingOutRecordedInEarlierWorldLine_DestinationAcceptsIt()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var destinations = new TestDestinations();
        var cStorage = new DarqTestStorage();
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator));
        await using var a = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator, destinations));

        // B is not reachable yet: A's OUT entry stays pending with the header of its step, from world-line 0.
        var aProcessor = await a.RegisterProcessorAsync(guard.Token);
        var step = await aProcessor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()), guard.Token);

        // An unrelated DARQ restarts: the cluster moves to world-line 1; A keeps its entry (it depends on nothing lost).
        await using (var c = await cStorage.OpenAsync(DarqGeneralSpeculationTests.General("c", 3, coordinator)))
        {
            cStorage.CrashNow();
        }

        await using var c2 = await cStorage.OpenAsync(DarqGeneralSpeculationTests.General("c", 3, coordinator));
        await a.DseStateObject!.RefreshAsync(guard.Token);
        await b.DseStateObject!.RefreshAsync(guard.Token);
        Assert.Equal(1, b.DseStateObject.WorldLine);
        Assert.Equal(1, a.PendingOutCount);

        // B becomes reachable: the entry must leave under A's current vertex, not be refused forever for its old one.
        destinations.Registry.Add(b);
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);
        var bProcessor = await b.RegisterProcessorAsync(guard.Token);
        Assert.Equal("x", (await bProcessor.Messages.ReadAsync(guard.Token)).Text());
    }
}
