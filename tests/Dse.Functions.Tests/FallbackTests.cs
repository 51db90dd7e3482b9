namespace Dse.Functions.Tests;

/// <summary>The fallback phase: TID-ordered re-execution of the transactions Aria's rule aborted, and rescheduling.</summary>
public class FallbackTests
{
    private static void Entities(EntityRegistration e) => e.Add<AccountEntity>().Add<Router>();

    // A long interval and a large cap put everything submitted at once into one epoch.
    private static void OneEpoch(EntityRuntimeOptions o)
    {
        o.Partitions = 2;
        o.EpochInterval = TimeSpan.FromMilliseconds(300);
        o.EpochMaxTransactions = 5_000;
    }

    [Fact]
    public async Task HotKey_AThousandTransfersInOneEpoch_AllCommitInThatEpoch()
    {
        await using var runtime = EntityRuntime.Start(OneEpoch, Entities);
        await Task.WhenAll(Enumerable.Range(0, 1000).Select(i => runtime.Client.Get<IAccount>($"d{i}").Set(10)));
        EntityRuntimeStatistics before = runtime.Statistics;

        var transfers = Enumerable.Range(0, 1000)
            .Select(i => runtime.Client.SubmitAsync("AccountEntity", Key($"d{i}"), "TransferTo", MemoryPack.MemoryPackSerializer.Serialize(("hot", 1L))))
            .ToList();
        TransactionOutcome[] outcomes = await Task.WhenAll(transfers);

        Assert.All(outcomes, o => Assert.True(o.Committed, o.Abort?.Message));
        Assert.Single(outcomes.Select(o => o.Epoch).Distinct());
        EntityRuntimeStatistics after = runtime.Statistics;
        Assert.Equal(0, after.Rescheduled - before.Rescheduled);

        // The first transfer commits lock-free; every later one read the hot account a lower TID wrote, so it
        // commits in the fallback phase, in TID order.
        Assert.Equal(999, outcomes.Count(o => o.Phase == TransactionPhase.Fallback));
        Assert.Equal(1000, (await runtime.GetStateAsync<IAccount, Account>("hot"))!.Balance);
    }

    [Fact]
    public async Task Fallback_TouchingAKeyOutsideItsFirstRun_IsRescheduledWithItsTidAndCommitsNextEpoch()
    {
        await using var runtime = EntityRuntime.Start(OneEpoch, Entities);
        await runtime.Client.Get<IRouter>("r").Point("x");

        // In one epoch: the lower TID repoints the router; the higher routes a deposit. The router's first run read
        // "x" from the snapshot and deposited there; Aria aborts it (it read what a lower TID wrote); its fallback run
        // reads "y", a key its first run never touched, so it moves to the next epoch with its TID.
        Task<TransactionOutcome> repoint = runtime.Client.SubmitAsync("Router", Key("r"), "Point", MemoryPack.MemoryPackSerializer.Serialize("y"));
        Task<TransactionOutcome> route = runtime.Client.SubmitAsync("Router", Key("r"), "Route", MemoryPack.MemoryPackSerializer.Serialize(5L));
        TransactionOutcome first = await repoint;
        TransactionOutcome second = await route;

        Assert.True(first.Committed);
        Assert.True(second.Committed, second.Abort?.Message);
        Assert.True(second.Tid > first.Tid);
        Assert.True(second.Epoch > first.Epoch, $"route ended in epoch {second.Epoch}, repoint in {first.Epoch}");
        Assert.Equal("y", second.GetResult<string>());
        Assert.True(runtime.Statistics.Rescheduled >= 1);
        Assert.Equal(5, (await runtime.GetStateAsync<IAccount, Account>("y"))!.Balance);
        Assert.Null(await runtime.GetStateAsync<IAccount, Account>("x"));
    }

    [Fact]
    public async Task Fallback_LogicAbort_RepliesWithItsExceptionAndAppliesNothing()
    {
        await using var runtime = EntityRuntime.Start(OneEpoch, Entities);
        await runtime.Client.Get<IAccount>("a").Set(3);

        // Both debit "a" in one epoch: the second is aborted by Aria, and in its fallback run "a" is short.
        Task<TransactionOutcome> first = runtime.Client.SubmitAsync("AccountEntity", Key("a"), "TransferTo", MemoryPack.MemoryPackSerializer.Serialize(("b", 2L)));
        Task<TransactionOutcome> second = runtime.Client.SubmitAsync("AccountEntity", Key("a"), "TransferTo", MemoryPack.MemoryPackSerializer.Serialize(("c", 2L)));
        TransactionOutcome one = await first;
        TransactionOutcome two = await second;

        Assert.True(one.Committed);
        Assert.Equal(TransactionPhase.Fallback, two.Phase);
        Assert.Equal(typeof(InsufficientFundsException).FullName, two.Abort!.ExceptionType);
        Assert.Equal("account a holds 1, cannot withdraw 2", two.Abort.Message);
        Assert.Null(await runtime.GetStateAsync<IAccount, Account>("c"));
        Assert.Equal(1, (await runtime.GetStateAsync<IAccount, Account>("a"))!.Balance);
    }

    private static byte[] Key(string key) => MemoryPack.MemoryPackSerializer.Serialize(key);
}
