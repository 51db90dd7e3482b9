namespace Dse.Functions.Tests;

public class SmokeTests
{
    private static void Entities(EntityRegistration e) =>
        e.Add<AccountEntity>().Add<Bank>().Add<Hotel>().Add<Flight>().Add<Order>();

    [Fact]
    public async Task Serial_TransferMovesMoney()
    {
        var runner = new SerialEntityRunner(Entities);
        await runner.Client.Get<IAccount>("alice").Set(100);
        long left = await runner.Client.Get<IAccount>("alice").TransferTo("bob", 30);
        Assert.Equal(70, left);
        Assert.Equal(30, runner.GetState<IAccount, Account>("bob")!.Balance);
        var ex = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runner.Client.Get<IAccount>("bob").TransferTo("alice", 31));
        Assert.Equal(typeof(InsufficientFundsException).FullName, ex.ExceptionType);
        Assert.Equal(30, runner.GetState<IAccount, Account>("bob")!.Balance);
    }

    [Fact]
    public async Task Runtime_TransferMovesMoney()
    {
        await using var runtime = EntityRuntime.Start(o => o.Partitions = 2, Entities);
        await runtime.Client.Get<IAccount>("alice").Set(100);
        long left = await runtime.Client.Get<IAccount>("alice").TransferTo("bob", 30);
        Assert.Equal(70, left);
        Assert.Equal(30, (await runtime.GetStateAsync<IAccount, Account>("bob"))!.Balance);
        long viaBank = await runtime.Client.Get<IBank>(Guid.NewGuid()).Transfer("alice", "bob", 5);
        Assert.Equal(65, viaBank);
        string r = await runtime.Client.Get<IOrder>("o1").Create(1, 2, "u").ContinueWith(t => t.IsFaulted ? t.Exception!.InnerException!.Message : t.Result);
        Assert.Contains("full", r);
    }

    [Fact]
    public async Task Runtime_ManyConcurrentTransfers_ConserveMoney()
    {
        await using var runtime = EntityRuntime.Start(o => o.Partitions = 2, Entities);
        for (int i = 0; i < 10; i++)
        {
            await runtime.Client.Get<IAccount>($"a{i}").Set(1000);
        }

        var random = new Random(1);
        var tasks = new List<Task>();
        for (int i = 0; i < 5000; i++)
        {
            string from = $"a{random.Next(10)}";
            string to = $"a{random.Next(10)}";
            tasks.Add(runtime.Client.Get<IAccount>(from).TransferTo(to, random.Next(1, 50)).ContinueWith(_ => { }));
        }

        await Task.WhenAll(tasks);
        var snapshot = await runtime.SnapshotAsync();
        Assert.Equal(10_000, snapshot.Values.Cast<Account>().Sum(a => a.Balance));
        Assert.True(runtime.Statistics.FallbackCommits > 0, runtime.Statistics.ToString());
    }
}
