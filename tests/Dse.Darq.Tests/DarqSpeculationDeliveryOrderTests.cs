using Dse.Storage;
using Dse.Testing;

namespace Dse.Darq.Tests;

/// <summary>
/// General speculation: a destination deduplicates a source by the largest LSN it has taken, so a restore that makes an
/// earlier OUT message pending again (it voids its acknowledgement) must not let a delivery turn collected before the
/// restore send a later message to that destination first.
/// </summary>
[Trait("Category", "Recovery")]
public sealed class DarqSpeculationDeliveryOrderTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Deliver_RestoreRependsEarlierMessageDuringTurn_DestinationGetsBothExactlyOnce()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var destinations = new TestDestinations();
        var dStorage = new DarqTestStorage();

        // S's log device can hold reads: with a budget of one payload, L2 is spilled, and the turn that delivers L1 then
        // reads L2 back from the log, which stops it between L1's acknowledgement and L2's delivery on purpose.
        var sLog = new HoldingDevice(DseDevices.CreateInMemory(new InMemoryStorage()));
        var sOptions = DarqTestStorage.Options(sLog, DseDevices.CreateInMemory(new InMemoryStorage()));
        DarqGeneralSpeculationTests.General("s", 1, coordinator, destinations)(sOptions);
        sOptions.MaxBufferedOutBytes = "L1".Length;
        var sLogger = new LogCapture();
        await using var s = await Darq.OpenAsync(sOptions, sLogger);
        var sProcessor = await s.RegisterProcessorAsync(guard.Token);

        long l1;
        long l2;
        await using (var d = await dStorage.OpenAsync(DarqGeneralSpeculationTests.General("d", 2, coordinator)))
        {
            destinations.Registry.Add(d);

            // One step writes L1 and L2 in S's version 1; L1's delivery waits at the destinations' gate until that version
            // is committed, so that L1's acknowledgement lands in S's version 2, which depends on D's version 1.
            await destinations.Gate.WaitAsync(guard.Token);
            var step = await sProcessor.StepAsync(new DarqStep().AddOut("d", "L1".Bytes()).AddOut("d", "L2".Bytes()), guard.Token);
            (l1, l2) = (step.OutLsns[0], step.OutLsns[1]);
            Assert.Equal(1, s.SpilledOutCount);
            await s.DseStateObject!.AdvanceVersionAsync(guard.Token);
            await s.DseStateObject.WaitForCommitAsync(1, 0, guard.Token);
            sLog.HoldReads();
            destinations.Gate.Release();

            // L1 is delivered and acknowledged; the turn that holds [L1, L2] is stopped in the read of L2's payload.
            await s.WaitForDeliveredAsync(l1, guard.Token);
            await sLog.FirstReadHeld.WaitAsync(guard.Token);
            Assert.Equal(1, s.PendingOutCount);

            // D crashes before persisting the version that took L1.
            dStorage.CrashNow();
        }

        // D's restart rolls S back to version 1: L1's acknowledgement, which depended on D's lost version, is voided and
        // L1 is pending again, before L2, which the stopped turn is about to send.
        await using var d2 = await dStorage.OpenAsync(DarqGeneralSpeculationTests.General("d", 2, coordinator));
        destinations.Registry.Add(d2);
        await s.DseStateObject.RefreshAsync(guard.Token);
        Assert.Equal(1, s.DseStateObject.WorldLine);
        Assert.Equal(2, s.PendingOutCount);

        // The turn goes on. Were L2 sent first, D would take LSN l2 and then drop L1 as a duplicate, acknowledging it.
        sLog.ReleaseReads();
        await s.WaitForDeliveredAsync(l1, guard.Token);
        await s.WaitForDeliveredAsync(l2, guard.Token);
        Assert.Equal(0, s.PendingOutCount);
        Assert.True(sLogger.Contains(4252), "the turn holding L2 did not stop for the re-pended L1 (event 4252)");

        // Through the barrier: D holds both messages, once each, in order.
        await s.DseStateObject.AdvanceVersionAsync(guard.Token);
        await d2.DseStateObject!.AdvanceVersionAsync(guard.Token);
        var received = (await d2.RegisterProcessorAsync(guard.Token)).Drain();
        Assert.Equal(["L1", "L2"], received.Select(m => m.Text()));
        await d2.WaitForRecoverableAsync(received[^1].Lsn, guard.Token);
        Assert.Equal(2, d2.UnconsumedCount);
    }
}
