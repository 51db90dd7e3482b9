using System.Diagnostics;
using System.Globalization;
using Dse.Functions;
using Dse.Samples.EntityBank;

// Bank transfers and travel orders as serializable transactions on Dse.Functions, in one process.
// Options: --accounts N (1000), --transfers N (100000), --partitions P (2), --orders N (300), --seed S (1).
var options = Options.Parse(args);
if (options is null)
{
    Console.Error.WriteLine("usage: EntityBank [--accounts N] [--transfers N] [--partitions P] [--orders N] [--seed S]");
    return 2;
}

const long Opening = 100;
await using var runtime = EntityRuntime.Start(
    o => o.Partitions = options.Partitions,
    e => e.Add<AccountEntity>().Add<Bank>().Add<Hotel>().Add<Flight>().Add<Order>());
Console.WriteLine($"EntityBank: {options.Accounts} accounts of {Opening}, {options.Transfers} transfers, {options.Partitions} partitions");

await Task.WhenAll(Enumerable.Range(0, options.Accounts).Select(i => runtime.Client.Get<IAccount>($"acct-{i}").Open(Opening)));

// Transfers: a tenth go to one hot account, so that many conflict and run again in the fallback phase.
var random = new Random(options.Seed);
var clock = Stopwatch.StartNew();
long committed = 0;
long aborted = 0;
using (var window = new SemaphoreSlim(2_000))
{
    var all = new List<Task>(options.Transfers);
    for (int i = 0; i < options.Transfers; i++)
    {
        await window.WaitAsync();
        string from = $"acct-{random.Next(options.Accounts)}";
        string to = random.Next(10) == 0 ? "acct-0" : $"acct-{random.Next(options.Accounts)}";
        long amount = random.Next(1, 20);
        all.Add(runtime.Client.Get<IBank>(Guid.NewGuid()).Transfer(from, to, amount).ContinueWith(
            t =>
            {
                window.Release();
                Interlocked.Increment(ref t.IsCompletedSuccessfully ? ref committed : ref aborted);
            },
            TaskScheduler.Default));
    }

    await Task.WhenAll(all);
}

clock.Stop();
EntityRuntimeStatistics stats = runtime.Statistics;
Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
    $"transfers: {committed} committed, {aborted} aborted (insufficient funds) in {clock.Elapsed.TotalSeconds:F2} s: {options.Transfers / clock.Elapsed.TotalSeconds:F0} transactions/s"));
Console.WriteLine($"protocol: {stats.Epochs} epochs, {stats.LockFreeCommits} lock-free commits, {stats.FallbackCommits} fallback commits, {stats.Rescheduled} rescheduled");

long total = 0;
bool negative = false;
for (int i = 0; i < options.Accounts; i++)
{
    long balance = (await runtime.GetStateAsync<IAccount, Account>($"acct-{i}"))?.Balance ?? 0;
    total += balance;
    negative |= balance < 0;
}

bool conserved = total == options.Accounts * Opening && !negative;
Console.WriteLine($"money conserved: {(conserved ? "yes" : "NO")} (total {total}, expected {options.Accounts * Opening}; negative balances: {(negative ? "yes" : "none")})");

// Orders: each reserves a seat and a room in parallel; a full flight or hotel aborts both.
const int Items = 10;
const int Capacity = 10;
await Task.WhenAll(Enumerable.Range(0, Items).SelectMany(i => new[]
{
    runtime.Client.Get<IHotel>(i).Stock(Capacity),
    runtime.Client.Get<IFlight>(i).Stock(Capacity),
}));
var orders = Enumerable.Range(0, options.Orders)
    .Select(i => runtime.Client.Get<IOrder>($"order-{i}").Create(random.Next(Items), random.Next(Items), $"user-{i % 17}"))
    .ToList();
try
{
    await Task.WhenAll(orders);
}
catch (EntityTransactionAbortedException)
{
    // Counted below: an order that found its flight or hotel full.
}

int booked = orders.Count(o => o.IsCompletedSuccessfully);
int rooms = 0;
int seats = 0;
for (int i = 0; i < Items; i++)
{
    rooms += (await runtime.Client.Get<IHotel>(i).Look()).Holders.Count;
    seats += (await runtime.Client.Get<IFlight>(i).Look()).Holders.Count;
}

bool atomic = rooms == booked && seats == booked;
Console.WriteLine($"orders: {booked} booked, {options.Orders - booked} refused; rooms held {rooms}, seats held {seats}: {(atomic ? "every order holds both or neither" : "MISMATCH")}");
return conserved && atomic ? 0 : 1;

internal sealed record Options(int Accounts, int Transfers, int Partitions, int Orders, int Seed)
{
    public static Options? Parse(string[] args)
    {
        var o = new Options(1_000, 100_000, 2, 300, 1);
        for (int i = 0; i < args.Length; i++)
        {
            if (i + 1 >= args.Length || !int.TryParse(args[i + 1], NumberStyles.None, CultureInfo.InvariantCulture, out int value) || value < 1)
            {
                return null;
            }

            o = args[i] switch
            {
                "--accounts" => o with { Accounts = value },
                "--transfers" => o with { Transfers = value },
                "--partitions" => o with { Partitions = value },
                "--orders" => o with { Orders = value },
                "--seed" => o with { Seed = value },
                _ => null,
            };
            if (o is null)
            {
                return null;
            }

            i++;
        }

        return o;
    }
}
