using Dse.Functions.Engine;
using MemoryPack;

namespace Dse.Functions.Tests;

public class OracleSmokeTests
{
    private static void Entities(EntityRegistration e) =>
        e.Add<AccountEntity>().Add<Bank>().Add<Hotel>().Add<Flight>().Add<Order>();

    [Fact]
    public async Task Transfers_MatchTheSerialOracle()
    {
        var log = new InMemoryEpochLog();
        await using var runtime = EntityRuntime.Start(o => o.Partitions = 2, Entities, log);
        var random = new Random(7);
        var pending = new List<(string, byte[], string, byte[], Task<TransactionOutcome>)>();
        for (int i = 0; i < 10; i++)
        {
            Add("AccountEntity", $"a{i}", "Set", MemoryPackSerializer.Serialize(1000L));
        }

        foreach (var p in pending) { await p.Item5; }

        for (int i = 0; i < 20000; i++)
        {
            Add("AccountEntity", $"a{random.Next(10)}", "TransferTo", MemoryPackSerializer.Serialize(($"a{random.Next(10)}", (long)random.Next(1, 50))));
        }

        var run = new List<SerialOracle.Submitted>();
        foreach (var (t, k, m, a, o) in pending)
        {
            run.Add(new SerialOracle.Submitted(t, k, m, a, await o));
        }

        var problems = SerialOracle.Check(run, log.Records, await runtime.SnapshotAsync(), Entities);
        Assert.True(problems.Count == 0, string.Join("\n", problems.Take(20)) + $"\n{runtime.Statistics}");

        void Add(string type, string key, string method, byte[] args)
        {
            byte[] k = MemoryPackSerializer.Serialize(key);
            pending.Add((type, k, method, args, runtime.Client.SubmitAsync(type, k, method, args)));
        }
    }
}
