namespace Dse.Functions.Tests;

/// <summary>
/// Two calls of one transaction that no await orders may not both touch one entity with a write: a deterministic
/// abort, the same in the runtime and in the serial runner, whatever the timing.
/// </summary>
public class ConcurrentEntityAccessTests
{
    private static void Entities(EntityRegistration e) => e.Add<AccountEntity>().Add<Probe>();

    [Fact]
    public async Task TwoParallelWrites_AbortWithTheSameMessageEverywhere_AndApplyNothing()
    {
        var runner = new SerialEntityRunner(Entities);
        await using var runtime = EntityRuntime.Start(o => o.Partitions = 2, Entities);
        var messages = new HashSet<string>();
        for (int i = 0; i < 20; i++)
        {
            var serial = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runner.Client.Get<IProbe>("p").ParallelWrites("acct"));
            var parallel = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runtime.Client.Get<IProbe>($"p{i}").ParallelWrites("acct"));
            Assert.Equal(typeof(ConcurrentEntityAccessException).FullName, serial.ExceptionType);
            Assert.Equal(serial.AbortMessage, parallel.AbortMessage);
            messages.Add(parallel.AbortMessage);
        }

        Assert.Equal("Calls root/0 and root/1 of one transaction both touched AccountEntity(acct), at least one writing, and no await ordered them.", Assert.Single(messages));
        Assert.Null(runner.GetState<IAccount, Account>("acct"));
        Assert.Null(await runtime.GetStateAsync<IAccount, Account>("acct"));
    }

    [Fact]
    public async Task WritesOrderedByAwait_Commit()
    {
        await using var runtime = EntityRuntime.Start(o => o.Partitions = 2, Entities);
        await runtime.Client.Get<IProbe>("p").SequentialWrites("acct");
        Assert.Equal(2, (await runtime.GetStateAsync<IAccount, Account>("acct"))!.Balance);
    }

    [Fact]
    public async Task TwoOneWayWrites_OfOneEntity_Abort()
    {
        // One-way calls are never awaited, so two of them are ordered by nothing.
        var runner = new SerialEntityRunner(Entities);
        await using var runtime = EntityRuntime.Start(o => o.Partitions = 2, Entities);
        var serial = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runner.Client.Get<IProbe>("p").DoubleDeposit("acct"));
        var parallel = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runtime.Client.Get<IProbe>("p").DoubleDeposit("acct"));
        Assert.Equal(typeof(ConcurrentEntityAccessException).FullName, parallel.ExceptionType);
        Assert.Equal("Calls root/0~ and root/1~ of one transaction both touched AccountEntity(acct), at least one writing, and no await ordered them.", parallel.AbortMessage);
        Assert.Equal(serial.AbortMessage, parallel.AbortMessage);
        Assert.Null(await runtime.GetStateAsync<IAccount, Account>("acct"));
    }

    [Fact]
    public async Task AReadDuringTheBody_IsOrderedBeforeAOneWayWriteOfTheSameEntity()
    {
        // The one-way deposit starts after the body has returned, so the awaited read before it sees the old balance.
        var runner = new SerialEntityRunner(Entities);
        await using var runtime = EntityRuntime.Start(o => o.Partitions = 2, Entities);
        Assert.Equal(0, await runner.Client.Get<IProbe>("p").OneWayThenRead("acct"));
        Assert.Equal(0, await runtime.Client.Get<IProbe>("p").OneWayThenRead("acct"));
        Assert.Equal(5, (await runtime.GetStateAsync<IAccount, Account>("acct"))!.Balance);
    }

    [Fact]
    public async Task ACaughtFailure_StillAbortsTheTransaction()
    {
        await using var runtime = EntityRuntime.Start(o => o.Partitions = 2, Entities);
        var aborted = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => runtime.Client.Get<IProbe>("p").CatchAndContinue("acct"));
        Assert.Equal(typeof(InsufficientFundsException).FullName, aborted.ExceptionType);
        Assert.Equal("AccountEntity", aborted.Entity);
        Assert.Equal("acct", aborted.Key);
        Assert.Null(await runtime.GetStateAsync<IAccount, Account>("acct"));
    }
}
