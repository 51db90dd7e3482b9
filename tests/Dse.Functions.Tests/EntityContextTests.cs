using Dse.Functions.Engine;
using MemoryPack;

namespace Dse.Functions.Tests;

/// <summary>Time, randomness and GUIDs from the transaction's context are the same when the transaction is replayed.</summary>
public class EntityContextTests
{
    private static void Entities(EntityRegistration e) => e.Add<AccountEntity>().Add<Probe>();

    [Fact]
    public async Task ContextValues_AreTheRecordsAndReplayIdentically()
    {
        var log = new InMemoryEpochLog();
        var submitted = new List<SerialOracle.Submitted>();
        IReadOnlyDictionary<(string Entity, object Key), object?> final;
        await using (var runtime = EntityRuntime.Start(o => o.Partitions = 2, Entities, log))
        {
            for (int i = 0; i < 50; i++)
            {
                byte[] key = MemoryPackSerializer.Serialize($"p{i}");
                TransactionOutcome outcome = await runtime.Client.SubmitAsync("Probe", key, "TakeStamp", ReadOnlyMemory<byte>.Empty);
                submitted.Add(new SerialOracle.Submitted("Probe", key, "TakeStamp", [], outcome));
            }

            final = await runtime.SnapshotAsync();
        }

        // Each stamp carries its epoch's timestamp; draws differ between transactions.
        var stamps = submitted.Select(s => s.Outcome.GetResult<Stamp>()).ToList();
        var recordTimes = log.Records.ToDictionary(r => r.Epoch, r => r.Timestamp);
        for (int i = 0; i < stamps.Count; i++)
        {
            Assert.Equal(recordTimes[submitted[i].Outcome.Epoch], stamps[i].At);
        }

        Assert.Equal(stamps.Count, stamps.Select(s => s.Id).Distinct().Count());
        Assert.Empty(SerialOracle.Check(submitted, log.Records, final, Entities));
    }
}
