using MemoryPack;

namespace Dse.Functions.Tests;

[MemoryPackable]
public partial record Pointer(string Target);

/// <summary>An entity whose call target depends on its state: its fallback run may touch other keys than its first run.</summary>
public interface IRouter : IEntity<string>
{
    Task Point(string target);

    Task<string> Route(long amount);
}

public sealed class Router : Entity<string, Pointer>, IRouter
{
    protected override Pointer Initial => new("nowhere");

    public Task Point(string target)
    {
        State = new Pointer(target);
        return Task.CompletedTask;
    }

    public async Task<string> Route(long amount)
    {
        string target = State.Target;
        await Entities.Get<IAccount>(target).Deposit(amount);
        return target;
    }
}

[MemoryPackable]
public partial record Stamp(DateTimeOffset At, Guid Id, int Draw);

/// <summary>Calls that misbehave in the ways the runtime must refuse deterministically.</summary>
public interface IProbe : IEntity<string>
{
    Task ParallelWrites(string account);

    Task SequentialWrites(string account);

    Task<long> OneWayThenRead(string account);

    Task DoubleDeposit(string account);

    Task<int> Recurse(int depth);

    Task CallUnregistered();

    Task WrongKeyType();

    Task<Stamp> TakeStamp();

    Task<int> TouchAfterTaskRun();

    Task<long> CatchAndContinue(string account);

    Task PassUnserializable();

    Task CallFragile();
}

/// <summary>A type MemoryPack cannot serialize.</summary>
public sealed class Opaque
{
    public int Value { get; set; }
}

public interface ISink : IEntity<string>
{
    Task Take(Opaque value);
}

public sealed class Sink : Entity<string, Unit>, ISink
{
    public Task Take(Opaque value) => Task.CompletedTask;
}

public interface IFragile : IEntity<string>
{
    Task Touch();
}

/// <summary>An entity whose constructor throws.</summary>
public sealed class Fragile : Entity<string, Unit>, IFragile
{
    public Fragile() => throw new InvalidOperationException("fragile cannot be built");

    public Task Touch() => Task.CompletedTask;
}

public interface IUnregistered : IEntity<string>
{
    Task Nothing();
}

public sealed class Probe : Entity<string, Stamp?>, IProbe
{
    public Task ParallelWrites(string account) =>
        Task.WhenAll(Entities.Get<IAccount>(account).Set(1), Entities.Get<IAccount>(account).Set(2));

    public async Task SequentialWrites(string account)
    {
        await Entities.Get<IAccount>(account).Set(1);
        await Entities.Get<IAccount>(account).Set(2);
    }

    public async Task<long> OneWayThenRead(string account)
    {
        await Entities.Get<IAccount>(account).Deposit(5);
        return await Entities.Get<IAccount>(account).Balance();
    }

    public async Task DoubleDeposit(string account)
    {
        await Entities.Get<IAccount>(account).Deposit(1);
        await Entities.Get<IAccount>(account).Deposit(2);
    }

    public async Task<int> Recurse(int depth) =>
        depth == 0 ? 0 : 1 + await Entities.Get<IProbe>(Key).Recurse(depth - 1);

    public Task CallUnregistered() => Entities.Get<IUnregistered>("x").Nothing();

    public Task WrongKeyType() => Entities.Get<IAccount>(42).Deposit(1);

    public Task<Stamp> TakeStamp()
    {
        var stamp = new Stamp(Context.UtcNow, Context.NewGuid(), Context.Random.Next());
        State = stamp;
        return Task.FromResult(stamp);
    }

#pragma warning disable DSEF004, DSEF005 // the test shows what happens when the rules are broken
    public async Task<int> TouchAfterTaskRun()
    {
        // Always continues on the thread pool: an awaited Task.Run that had finished already would continue inline, on
        // the partition's own thread, and break no rule.
        await Task.Run(() => { }).ConfigureAwait(ConfigureAwaitOptions.ForceYielding);
        State = null;
        return 1;
    }
#pragma warning restore DSEF004, DSEF005

    public async Task PassUnserializable()
    {
        try
        {
            await Entities.Get<ISink>("s").Take(new Opaque { Value = 1 });
        }
        catch (EntityArgumentException)
        {
            // Caught, but the transaction still aborts.
        }

        await Entities.Get<IAccount>("after").Set(1);
    }

    public async Task CallFragile()
    {
        await Entities.Get<IAccount>("before").Set(1);
        await Entities.Get<IFragile>("f").Touch();
    }

    public async Task<long> CatchAndContinue(string account)
    {
        try
        {
            await Entities.Get<IAccount>(account).Withdraw(1_000_000);
        }
        catch (EntityTransactionAbortedException)
        {
            // Catching does not save the transaction.
        }

        await Entities.Get<IAccount>(account).Set(7);
        return 7;
    }
}
