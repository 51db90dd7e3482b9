using Dse.Benchmarks.Scenarios.Functions;
using Dse.Functions.Engine;
using MemoryPack;

namespace Dse.Functions.Tests;

/// <summary>
/// The runtime against the serial oracle over seeded workloads: YCSB-T transfers on 10,000 accounts with the creditor
/// uniform, Zipf 0.99 or Zipf 0.999; multi-call bank transfers and read-only totals; hotel-and-flight orders that fail
/// when full; plain balance reads. Each seed bursts its requests so that epochs fill and conflict, on 1 to 3
/// partitions. <c>DSE_FUNCTIONS_SEEDS</c> sets how many seeds (default 200), <c>DSE_FUNCTIONS_SEED</c> runs one.
/// </summary>
[Trait("Category", "SerialOracle")]
public class SerialOracleTests
{
    private const int YcsbAccounts = 10_000;
    private const int BankAccounts = 40;

    private static void Entities(EntityRegistration e) =>
        e.Add<AccountEntity>().Add<Bank>().Add<Hotel>().Add<Flight>().Add<Order>();

    public static IEnumerable<object[]> Seeds()
    {
        if (int.TryParse(Environment.GetEnvironmentVariable("DSE_FUNCTIONS_SEED"), out int one))
        {
            yield return [one];
            yield break;
        }

        int count = int.TryParse(Environment.GetEnvironmentVariable("DSE_FUNCTIONS_SEEDS"), out int n) ? n : 200;
        yield return [0, count];
    }

    [Theory]
    [MemberData(nameof(Seeds))]
    public async Task Workloads_AreSerializableInTheProtocolsOrder(int first, int count = 1)
    {
        for (int seed = first; seed < first + count; seed++)
        {
            List<string> problems = await RunSeedAsync(seed);
            Assert.True(problems.Count == 0, $"seed {seed} (rerun with DSE_FUNCTIONS_SEED={seed}):\n{string.Join("\n", problems.Take(15))}");
        }
    }

    private static async Task<List<string>> RunSeedAsync(int seed)
    {
        var random = new Random(seed);
        double theta = (seed % 3) switch { 0 => 0.0, 1 => 0.99, _ => 0.999 };
        int partitions = 1 + (seed / 3 % 3);
        var log = new InMemoryEpochLog();
        var submitted = new List<(string Type, byte[] Key, string Method, byte[] Args, Task<TransactionOutcome> Outcome)>();
        IReadOnlyDictionary<(string Entity, object Key), object?> final;
        await using (var runtime = EntityRuntime.Start(o => o.Partitions = partitions, Entities, log))
        {
            void Submit(string type, byte[] key, string method, byte[] args) =>
                submitted.Add((type, key, method, args, runtime.Client.SubmitAsync(type, key, method, args)));

            // Opening balances: YCSB accounts small enough that some debits abort, bank accounts, stocked items.
            var creditors = new Zipfian(YcsbAccounts, theta, new Random(seed + 1_000_000));
            var hot = new List<int>();
            for (int i = 0; i < 200; i++)
            {
                hot.Add(creditors.Next());
            }

            foreach (int account in hot.Distinct())
            {
                Submit("AccountEntity", Key($"y{account}"), "Set", MemoryPackSerializer.Serialize((long)random.Next(0, 4)));
            }

            for (int i = 0; i < BankAccounts; i++)
            {
                Submit("AccountEntity", Key($"b{i}"), "Set", MemoryPackSerializer.Serialize(20L));
            }

            for (int i = 0; i < 6; i++)
            {
                Submit("Hotel", MemoryPackSerializer.Serialize(i), "Stock", MemoryPackSerializer.Serialize(random.Next(0, 5)));
                Submit("Flight", MemoryPackSerializer.Serialize(i), "Stock", MemoryPackSerializer.Serialize(random.Next(0, 5)));
            }

            await Task.WhenAll(submitted.Select(s => s.Outcome));

            int transactions = random.Next(1_000, 2_500);
            for (int i = 0; i < transactions; i++)
            {
                int kind = random.Next(100);
                if (kind < 55)
                {
                    // YCSB-T: debtor uniform, creditor by the seed's skew.
                    int debtor = random.Next(4) == 0 ? hot[random.Next(hot.Count)] : random.Next(YcsbAccounts);
                    Submit("AccountEntity", Key($"y{debtor}"), "TransferTo",
                        MemoryPackSerializer.Serialize(($"y{creditors.Next()}", (long)random.Next(1, 3))));
                }
                else if (kind < 75)
                {
                    Submit("Bank", MemoryPackSerializer.Serialize(Guid(random)), "Transfer",
                        MemoryPackSerializer.Serialize(($"b{random.Next(BankAccounts)}", $"b{random.Next(BankAccounts)}", (long)random.Next(1, 8))));
                }
                else if (kind < 82)
                {
                    string[] accounts = [.. Enumerable.Range(0, random.Next(1, 6)).Select(_ => $"b{random.Next(BankAccounts)}").Distinct()];
                    Submit("Bank", MemoryPackSerializer.Serialize(Guid(random)), "Total", MemoryPackSerializer.Serialize(accounts));
                }
                else if (kind < 92)
                {
                    Submit("Order", Key($"o{random.Next(300)}"), "Create",
                        MemoryPackSerializer.Serialize((random.Next(6), random.Next(6), $"u{random.Next(10)}")));
                }
                else
                {
                    Submit("AccountEntity", Key($"b{random.Next(BankAccounts)}"), "Balance", []);
                }

                if (random.Next(400) == 0)
                {
                    // Waiting for every outcome so far ends their epochs before more arrive: runs mix full and small epochs.
                    await Task.WhenAll(submitted.Select(s => s.Outcome));
                }
            }

            await Task.WhenAll(submitted.Select(s => s.Outcome));
            final = await runtime.SnapshotAsync();
        }

        var run = new List<SerialOracle.Submitted>(submitted.Count);
        foreach (var s in submitted)
        {
            run.Add(new SerialOracle.Submitted(s.Type, s.Key, s.Method, s.Args, await s.Outcome));
        }

        List<string> problems = SerialOracle.Check(run, log.Records, final, Entities);
        problems.AddRange(MoneyProblems(final, submitted.Count));
        return problems;
    }

    // Balances never go negative, and money only moves: the sum over bank accounts stays what was opened.
    private static IEnumerable<string> MoneyProblems(IReadOnlyDictionary<(string Entity, object Key), object?> final, int requests)
    {
        _ = requests;
        long bankTotal = 0;
        foreach (((string entity, object key), object? value) in final)
        {
            if (entity == "AccountEntity" && value is Account account)
            {
                if (account.Balance < 0)
                {
                    yield return $"{key} has a negative balance {account.Balance}";
                }

                if (((string)key).StartsWith('b'))
                {
                    bankTotal += account.Balance;
                }
            }
        }

        if (bankTotal != BankAccounts * 20L)
        {
            yield return $"bank accounts hold {bankTotal}, opened with {BankAccounts * 20L}";
        }
    }

    private static byte[] Key(string key) => MemoryPackSerializer.Serialize(key);

    private static Guid Guid(Random random)
    {
        Span<byte> bytes = stackalloc byte[16];
        random.NextBytes(bytes);
        return new Guid(bytes);
    }
}
