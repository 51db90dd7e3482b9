namespace Dse.Darq.Tests;

/// <summary>
/// General speculation keeps a record (with a deduplication undo table) per version the coordinator has not committed,
/// in the commit cookie. When that outgrows the commit records, the commit is refused with a clear error before FasterLog
/// sees it, instead of failing inside FasterLog's commit worker (which would then fail every later commit too).
/// </summary>
public sealed class DarqSpeculationCookieLimitTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Commit_UncommittedVersionsOutgrowTheCommitRecords_RefusedWithAClearError()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var destinations = new TestDestinations();
        await using var a = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator));
        destinations.Registry.Add(a);
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator, destinations));

        // A depends on B's first version, which B never persists: none of A's versions can be committed from here on.
        var bProcessor = await b.RegisterProcessorAsync(guard.Token);
        var sent = await bProcessor.StepAsync(new DarqStep().AddOut("a", "hold".Bytes()), guard.Token);
        await b.WaitForDeliveredAsync(sent.OutLsns[0], guard.Token);

        // Each version held keeps a record, with an undo entry per producer that changed since it (the test storage
        // allows 16 producers; B, as a source, is one of them). Backpressure holds enqueues back once the records reach
        // their budget, but not explicit version advances: a caller that advances on its own (without
        // WaitForSpeculationRoomAsync) still fills the commit records.
        InvalidOperationException? refused = null;
        for (int i = 1; i <= 2000 && refused is null; i++)
        {
            if (!a.IsBackpressured)
            {
                await a.EnqueueAsync(1 + (i % 15), i, "x".Bytes(), guard.Token);
            }

            try
            {
                await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
                await a.CommitAsync(guard.Token);
            }
            catch (InvalidOperationException e)
            {
                refused = e;
            }
        }

        Assert.NotNull(refused);
        Assert.Contains("more than the", refused.Message, StringComparison.Ordinal);
        Assert.Contains("the coordinator has not committed", refused.Message, StringComparison.Ordinal);
    }
}
