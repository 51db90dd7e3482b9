using Dse.Functions.Engine;
using MemoryPack;

namespace Dse.Functions.Tests;

/// <summary>
/// Aria's commit rule as Styx applies it (FUNCTIONS.md B.3): "t aborts iff some k in RS(t) ∪ WS(t) has a writer with a
/// lower TID in the epoch; WAR allowed". The rule alone against the paper's example and a brute-force reference, then
/// in the runtime: logic aborts are left out, and an abort on one partition is an abort on all.
/// </summary>
public class AriaConflictTests
{
    private const int RandomEpochs = 100_000;

    /// <summary>
    /// Styx's Figure 4: Worker1 {k1: T1}, Worker2 {k2: T1, T2; k8: T2, T3}, Worker3 {k3: T3}. T1 commits on both
    /// workers it touched; T2 and T3 conflict on Worker2, at k2 and k8, and run again with locks. The figure gives who
    /// touched which key; the read/write split here is one that produces the paper's outcome: T1 writes k1 and k2, T2
    /// reads and writes k2 and writes k8, T3 reads k8 and writes k3.
    /// </summary>
    [Fact]
    public void StyxFigure4_T1Commits_T2AndT3ConflictOnWorker2()
    {
        (long, IEnumerable<string>, IEnumerable<string>)[] worker1 = [(1, [], ["k1"])];
        (long, IEnumerable<string>, IEnumerable<string>)[] worker2 = [(1, [], ["k2"]), (2, ["k2"], ["k2", "k8"]), (3, ["k8"], [])];
        (long, IEnumerable<string>, IEnumerable<string>)[] worker3 = [(3, [], ["k3"])];

        Assert.Empty(AriaConflicts.Aborts(worker1));
        Assert.Equal([2L, 3L], AriaConflicts.Aborts(worker2).Order());
        Assert.Empty(AriaConflicts.Aborts(worker3));

        // Sync2: the union of the local abort sets; T1 is the only lock-free commit (C1 = C2 = {T1}).
        var aborted = new HashSet<long>();
        foreach (var worker in new[] { worker1, worker2, worker3 })
        {
            aborted.UnionWith(AriaConflicts.Aborts(worker));
        }

        Assert.Equal([2L, 3L], aborted.Order());

        // T2 itself aborts, yet its write reservation on k8 still aborts T3 (only logic aborts are left out).
        Assert.Contains(3L, AriaConflicts.Aborts<string>([(2, [], ["k8"]), (3, ["k8"], [])]));
    }

    [Fact]
    public void WriteAfterLowerRead_IsAllowed()
    {
        Assert.Empty(AriaConflicts.Aborts<int>([(1, [7], []), (2, [], [7])]));
        Assert.Empty(AriaConflicts.Aborts<int>([(1, [7], []), (2, [7], [7])]));
    }

    [Fact]
    public void ReadAfterLowerWrite_AbortsTheReader()
    {
        Assert.Equal([2L], AriaConflicts.Aborts<int>([(1, [], [7]), (2, [7], [])]));
    }

    [Fact]
    public void WriteAfterLowerWrite_AbortsTheHigherWriter()
    {
        Assert.Equal([5L], AriaConflicts.Aborts<int>([(5, [], [7]), (3, [], [7])]));
    }

    [Fact]
    public void LowestWriter_OrAloneOnItsKeys_Commits()
    {
        Assert.Empty(AriaConflicts.Aborts<int>([]));
        Assert.Empty(AriaConflicts.Aborts<int>([(4, [1, 2], [1, 2])]));
        Assert.Empty(AriaConflicts.Aborts<int>([(1, [1], [1]), (2, [2], [2]), (3, [3], [3])]));
    }

    /// <summary>100,000 random epochs (1..12 transactions, keys 0..15, random TIDs) against a brute-force reading of the rule.</summary>
    [Fact]
    public void RandomEpochs_MatchBruteForceReference()
    {
        (int first, int count) = Seeds();
        int aborts = 0;
        int commits = 0;
        for (int seed = first; seed < first + count; seed++)
        {
            var random = new Random(seed);
            Footprint[] epoch = RandomEpoch(random);
            HashSet<long> expected = Reference(epoch);

            // Both input shapes the rule accepts: a collection, and a lazy sequence it must buffer.
            IEnumerable<(long, IEnumerable<int>, IEnumerable<int>)> input = epoch.Select(f => (f.Tid, (IEnumerable<int>)KeysOf(f.Reads, random), (IEnumerable<int>)KeysOf(f.Writes, random)));
            HashSet<long> actual = AriaConflicts.Aborts(random.Next(2) == 0 ? input.ToList() : input);
            if (!actual.SetEquals(expected))
            {
                Assert.Fail(
                    $"epoch seed {seed} (replay: DSE_FUNCTIONS_SEED={seed} dotnet test -c Release --filter \"FullyQualifiedName~AriaConflictTests.RandomEpochs\"): "
                    + $"rule aborts [{string.Join(", ", actual.Order())}], reference [{string.Join(", ", expected.Order())}] for {string.Join("; ", epoch.Select(f => f.ToString()))}");
            }

            aborts += expected.Count;
            commits += epoch.Length - expected.Count;
        }

        if (count == RandomEpochs)
        {
            Assert.True(aborts > count / 2 && commits > count, $"{aborts} aborts and {commits} commits: the epochs do not exercise both outcomes");
        }
    }

    /// <summary>
    /// A lower transaction that wrote a key and then threw is a logic abort: it is left out before the rule runs, so a
    /// higher reader of that key in the same epoch commits lock-free and reads the epoch's snapshot. The control with a
    /// lower writer that commits sends the reader to the fallback, where it reads the write.
    /// </summary>
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task LowerWriterLogicAborts_HigherReaderInSameEpoch_CommitsLockFree(bool writerFails)
    {
        await using EntityRuntime runtime = StartTwoPerEpoch(e => e.Add<RegisterEntity>());
        byte[] key = MemoryPackSerializer.Serialize("r");

        // Both submitted before either is awaited: the epoch is cut when the second arrives.
        Task<TransactionOutcome> writer = runtime.Client.SubmitAsync("RegisterEntity", key, writerFails ? "WriteThenFail" : "Write", MemoryPackSerializer.Serialize(7L));
        Task<TransactionOutcome> reader = runtime.Client.SubmitAsync("RegisterEntity", key, "Read", ReadOnlyMemory<byte>.Empty);
        TransactionOutcome w = await writer;
        TransactionOutcome r = await reader;

        Assert.Equal(w.Epoch, r.Epoch);
        Assert.True(w.Tid < r.Tid, $"writer T{w.Tid}, reader T{r.Tid}");
        Assert.True(r.Committed, r.Abort?.ToString());
        if (writerFails)
        {
            Assert.Equal(TransactionPhase.OptimisticLogicAbort, w.Phase);
            Assert.Equal(typeof(RegisterFailedException).FullName, w.Abort?.ExceptionType);
            Assert.Equal(TransactionPhase.LockFree, r.Phase);
            Assert.Equal(0L, r.GetResult<long>());
            Assert.Equal(0L, await runtime.GetStateAsync<IRegister, long>("r"));
        }
        else
        {
            Assert.Equal(TransactionPhase.LockFree, w.Phase);
            Assert.Equal(TransactionPhase.Fallback, r.Phase);
            Assert.Equal(7L, r.GetResult<long>());
            Assert.Equal(7L, await runtime.GetStateAsync<IRegister, long>("r"));
        }
    }

    /// <summary>
    /// A transfer between accounts on two partitions, with a lower TID of its epoch writing the debtor: the debtor's
    /// partition aborts it by the rule, the creditor's partition sees no conflict, and the union makes both drop its
    /// lock-free writes and run it in the fallback. The state is as if the two ran one after the other.
    /// </summary>
    [Fact]
    public async Task ConflictOnOnePartition_AbortsTheTransactionOnAll()
    {
        await using EntityRuntime runtime = StartTwoPerEpoch(e => e.Add<AccountEntity>().Add<Bank>());
        (string debtor, string creditor) = KeysOnDifferentPartitions(runtime);

        // Epoch 1: the opening balances (two transactions, so one epoch).
        await Task.WhenAll(
            runtime.Client.Get<IAccount>(debtor).Set(100),
            runtime.Client.Get<IAccount>(creditor).Set(0));

        // Epoch 2: T(lower) sets the debtor's balance, T(higher) transfers from it.
        Task<TransactionOutcome> set = runtime.Client.SubmitAsync("AccountEntity", MemoryPackSerializer.Serialize(debtor), "Set", MemoryPackSerializer.Serialize(50L));
        Task<TransactionOutcome> transfer = runtime.Client.SubmitAsync(
            "Bank", MemoryPackSerializer.Serialize(Guid.Empty), "Transfer", MemoryPackSerializer.Serialize((debtor, creditor, 10L)));
        TransactionOutcome s = await set;
        TransactionOutcome t = await transfer;

        Assert.Equal(s.Epoch, t.Epoch);
        Assert.True(s.Tid < t.Tid, $"set T{s.Tid}, transfer T{t.Tid}");
        Assert.Equal(TransactionPhase.LockFree, s.Phase);
        Assert.Equal(TransactionPhase.Fallback, t.Phase);
        Assert.Equal(40L, t.GetResult<long>());
        Assert.Equal(40L, (await runtime.GetStateAsync<IAccount, Account>(debtor))!.Balance);
        Assert.Equal(10L, (await runtime.GetStateAsync<IAccount, Account>(creditor))!.Balance);
        Assert.Equal(1, runtime.Statistics.FallbackCommits);
    }

    /// <summary>A runtime whose epochs are cut by count alone: every two submitted transactions form one epoch.</summary>
    private static EntityRuntime StartTwoPerEpoch(Action<EntityRegistration> entities) =>
        EntityRuntime.Start(
            o =>
            {
                o.Partitions = 2;
                o.EpochMaxTransactions = 2;
                o.EpochInterval = TimeSpan.FromMinutes(5);
            },
            entities);

    private static (string Debtor, string Creditor) KeysOnDifferentPartitions(EntityRuntime runtime)
    {
        EntityRegistry registry = runtime.Engine.Registry;
        EntityType account = registry.ForClass(typeof(AccountEntity));
        int PartitionOf(string key) => runtime.Engine.PartitionOf(registry.Address(account, key)).Index;

        string debtor = "debtor";
        for (int i = 0; ; i++)
        {
            string creditor = $"creditor{i}";
            if (PartitionOf(creditor) != PartitionOf(debtor))
            {
                return (debtor, creditor);
            }
        }
    }

    private static (int First, int Count) Seeds() =>
        int.TryParse(Environment.GetEnvironmentVariable("DSE_FUNCTIONS_SEED"), out int one) ? (one, 1) : (0, RandomEpochs);

    private static Footprint[] RandomEpoch(Random random)
    {
        int count = random.Next(1, 13);

        // Small dense TIDs collide often on keys; large sparse ones check that nothing assumes consecutive TIDs.
        long span = random.Next(2) == 0 ? count * 2 : long.MaxValue / 2;
        var tids = new HashSet<long>();
        while (tids.Count < count)
        {
            tids.Add(random.NextInt64(1, span + 1));
        }

        double readRate = random.NextDouble() * 0.4;
        double writeRate = random.NextDouble() * 0.3;
        return [.. tids.Select(tid => new Footprint(tid, RandomKeys(random, readRate), RandomKeys(random, writeRate)))];
    }

    private static ushort RandomKeys(Random random, double rate)
    {
        ushort keys = 0;
        for (int k = 0; k < 16; k++)
        {
            if (random.NextDouble() < rate)
            {
                keys |= (ushort)(1 << k);
            }
        }

        return keys;
    }

    /// <summary>The keys of a set as the runtime might hand them over: in any order, sometimes repeated.</summary>
    private static List<int> KeysOf(ushort set, Random random)
    {
        var keys = new List<int>();
        for (int k = 0; k < 16; k++)
        {
            if ((set & (1 << k)) != 0)
            {
                keys.Add(k);
                if (random.Next(8) == 0)
                {
                    keys.Add(k);
                }
            }
        }

        random.Shuffle(System.Runtime.InteropServices.CollectionsMarshal.AsSpan(keys));
        return keys;
    }

    /// <summary>The rule, read literally: t aborts iff some other transaction of the epoch with a lower TID wrote a key t read or wrote.</summary>
    private static HashSet<long> Reference(Footprint[] epoch)
    {
        var aborts = new HashSet<long>();
        foreach (Footprint t in epoch)
        {
            int touched = t.Reads | t.Writes;
            foreach (Footprint other in epoch)
            {
                if (other.Tid < t.Tid && (other.Writes & touched) != 0)
                {
                    aborts.Add(t.Tid);
                }
            }
        }

        return aborts;
    }

    private readonly record struct Footprint(long Tid, ushort Reads, ushort Writes)
    {
        public override string ToString() => $"T{Tid} R{{{Keys(Reads)}}} W{{{Keys(Writes)}}}";

        private static string Keys(ushort set) => string.Join(",", Enumerable.Range(0, 16).Where(k => (set & (1 << k)) != 0));
    }
}
