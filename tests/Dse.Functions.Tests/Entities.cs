using System.Collections.Immutable;
using MemoryPack;

namespace Dse.Functions.Tests;

[MemoryPackable]
public partial record Account(long Balance);

public sealed class InsufficientFundsException(string key, long balance, long amount)
    : Exception($"account {key} holds {balance}, cannot withdraw {amount}");

public interface IAccount : IEntity<string>
{
    Task<long> Balance();

    Task Withdraw(long amount);

    Task<long> TransferTo(string creditor, long amount);

    [OneWay]
    Task Deposit(long amount);

    Task Set(long balance);
}

public sealed class AccountEntity : Entity<string, Account>, IAccount
{
    protected override Account Initial => new(0);

    public Task<long> Balance() => Task.FromResult(State.Balance);

    public Task Withdraw(long amount)
    {
        if (State.Balance < amount)
        {
            throw new InsufficientFundsException(Key, State.Balance, amount);
        }

        State = State with { Balance = State.Balance - amount };
        return Task.CompletedTask;
    }

    public async Task<long> TransferTo(string creditor, long amount)
    {
        await Withdraw(amount);
        await Entities.Get<IAccount>(creditor).Deposit(amount);
        return State.Balance;
    }

    public Task Deposit(long amount)
    {
        State = State with { Balance = State.Balance + amount };
        return Task.CompletedTask;
    }

    public Task Set(long balance)
    {
        State = new Account(balance);
        return Task.CompletedTask;
    }
}

public interface IBank : IEntity<Guid>
{
    Task<long> Transfer(string from, string to, long amount);

    Task<long> Total(string[] accounts);
}

public sealed class Bank : Entity<Guid, Unit>, IBank
{
    public async Task<long> Transfer(string from, string to, long amount)
    {
        IAccount debtor = Entities.Get<IAccount>(from);
        await debtor.Withdraw(amount);
        await Entities.Get<IAccount>(to).Deposit(amount);
        return await debtor.Balance();
    }

    public async Task<long> Total(string[] accounts)
    {
        long[] balances = await Task.WhenAll(accounts.Select(a => Entities.Get<IAccount>(a).Balance()));
        return balances.Sum();
    }
}

[MemoryPackable]
public partial record Inventory(int Free, ImmutableList<string> Holders);

[MemoryPackable]
public partial record Booking(int Flight, int Hotel, string User);

public sealed class NotEnoughSpaceException(string message) : Exception(message);

/// <summary>An item with a number of places: a hotel's rooms, a flight's seats.</summary>
public interface IStock : IEntity<int>
{
    Task Reserve(string orderId);

    Task Stock(int free);
}

public interface IHotel : IStock;

public interface IFlight : IStock;

public interface IOrder : IEntity<string>
{
    Task<string> Create(int flightId, int hotelId, string userId);
}

/// <summary>Places of one item, reserved one order at a time; full means the order fails.</summary>
public abstract class StockEntity : Entity<int, Inventory>
{
    protected override Inventory Initial => new(0, []);

    /// <summary>What the item is, for messages: "hotel", "flight".</summary>
    protected abstract string Kind { get; }

    public Task Reserve(string orderId)
    {
        if (State.Free == 0)
        {
            throw new NotEnoughSpaceException($"{Kind} {Key} is full");
        }

        State = State with { Free = State.Free - 1, Holders = State.Holders.Add(orderId) };
        return Task.CompletedTask;
    }

    public Task Stock(int free)
    {
        State = State with { Free = free };
        return Task.CompletedTask;
    }
}

public sealed class Hotel : StockEntity, IHotel
{
    protected override string Kind => "hotel";
}

public sealed class Flight : StockEntity, IFlight
{
    protected override string Kind => "flight";
}

public sealed class Order : Entity<string, Booking?>, IOrder
{
    public async Task<string> Create(int flightId, int hotelId, string userId)
    {
        await Task.WhenAll(
            Entities.Get<IHotel>(hotelId).Reserve(Key),
            Entities.Get<IFlight>(flightId).Reserve(Key));
        State = new Booking(flightId, hotelId, userId);
        return "Reservation successful";
    }
}
