using System.Runtime.CompilerServices;

namespace Dse.Functions.Tests;

// TEMPORARY: what the generator will write.
internal sealed class AccountProxy(EntityProxyContext c) : EntityProxy(c), IAccount
{
    public Task<long> Balance() => Call<Unit, long>("Balance", default);
    public Task Withdraw(long amount) => Call("Withdraw", amount);
    public Task<long> TransferTo(string creditor, long amount) => Call<(string, long), long>("TransferTo", (creditor, amount));
    public Task Deposit(long amount) => CallOneWay("Deposit", amount);
    public Task Set(long balance) => Call("Set", balance);
}

internal sealed class BankProxy(EntityProxyContext c) : EntityProxy(c), IBank
{
    public Task<long> Transfer(string from, string to, long amount) => Call<(string, string, long), long>("Transfer", (from, to, amount));
    public Task<long> Total(string[] accounts) => Call<string[], long>("Total", accounts);
}

internal sealed class HotelProxy(EntityProxyContext c) : EntityProxy(c), IHotel
{
    public Task Reserve(string orderId) => Call("Reserve", orderId);
    public Task Stock(int free) => Call("Stock", free);
}

internal sealed class FlightProxy(EntityProxyContext c) : EntityProxy(c), IFlight
{
    public Task Reserve(string orderId) => Call("Reserve", orderId);
    public Task Stock(int free) => Call("Stock", free);
}

internal sealed class OrderProxy(EntityProxyContext c) : EntityProxy(c), IOrder
{
    public Task<string> Create(int flightId, int hotelId, string userId) => Call<(int, int, string), string>("Create", (flightId, hotelId, userId));
}

internal static class HandWrittenRegistration
{
#pragma warning disable CA2255
    [ModuleInitializer]
#pragma warning restore CA2255
    internal static void Register()
    {
        EntityCatalog.RegisterProxy<IAccount>(c => new AccountProxy(c));
        EntityCatalog.RegisterProxy<IBank>(c => new BankProxy(c));
        EntityCatalog.RegisterProxy<IHotel>(c => new HotelProxy(c));
        EntityCatalog.RegisterProxy<IFlight>(c => new FlightProxy(c));
        EntityCatalog.RegisterProxy<IOrder>(c => new OrderProxy(c));
        EntityCatalog.RegisterEntity<AccountEntity, string, Account>("AccountEntity", () => new AccountEntity(), [typeof(IAccount)],
        [
            EntityMethod.Create<AccountEntity, Unit, long>("Balance", false, (e, a) => ((IAccount)e).Balance()),
            EntityMethod.Create<AccountEntity, long>("Withdraw", false, (e, a) => ((IAccount)e).Withdraw(a)),
            EntityMethod.Create<AccountEntity, (string, long), long>("TransferTo", false, (e, a) => ((IAccount)e).TransferTo(a.Item1, a.Item2)),
            EntityMethod.Create<AccountEntity, long>("Deposit", true, (e, a) => ((IAccount)e).Deposit(a)),
            EntityMethod.Create<AccountEntity, long>("Set", false, (e, a) => ((IAccount)e).Set(a)),
        ]);
        EntityCatalog.RegisterEntity<Bank, Guid, Unit>("Bank", () => new Bank(), [typeof(IBank)],
        [
            EntityMethod.Create<Bank, (string, string, long), long>("Transfer", false, (e, a) => ((IBank)e).Transfer(a.Item1, a.Item2, a.Item3)),
            EntityMethod.Create<Bank, string[], long>("Total", false, (e, a) => ((IBank)e).Total(a)),
        ]);
        EntityCatalog.RegisterEntity<Hotel, int, Inventory>("Hotel", () => new Hotel(), [typeof(IHotel)],
        [
            EntityMethod.Create<Hotel, string>("Reserve", false, (e, a) => ((IHotel)e).Reserve(a)),
            EntityMethod.Create<Hotel, int>("Stock", false, (e, a) => ((IHotel)e).Stock(a)),
        ]);
        EntityCatalog.RegisterEntity<Flight, int, Inventory>("Flight", () => new Flight(), [typeof(IFlight)],
        [
            EntityMethod.Create<Flight, string>("Reserve", false, (e, a) => ((IFlight)e).Reserve(a)),
            EntityMethod.Create<Flight, int>("Stock", false, (e, a) => ((IFlight)e).Stock(a)),
        ]);
        EntityCatalog.RegisterEntity<Order, string, Booking?>("Order", () => new Order(), [typeof(IOrder)],
        [
            EntityMethod.Create<Order, (int, int, string), string>("Create", false, (e, a) => ((IOrder)e).Create(a.Item1, a.Item2, a.Item3)),
        ]);
    }
}
