using Dse.Functions.Engine;

namespace Dse.Functions.Tests;

/// <summary>
/// Exact completion credit (FUNCTIONS.md B.2): the splits themselves, then seeded random call graphs run through the
/// real call machinery (<see cref="Invocation"/>) with every message delivered in a random order by
/// <see cref="RandomOrderSite"/>. <c>DSE_FUNCTIONS_SEED</c> runs one graph seed.
/// </summary>
public class AckCreditTests
{
    private const int GraphCount = 10_000;
    private const int MaxNodes = 64;
    private const int MaxDepth = 16;
    private const int MaxFanOut = 8;
    private const int SiteCallDepth = 1000;

    private static readonly EntityRegistry Registry = new([typeof(GraphNodeEntity)]);

    [Fact]
    public void Full_Is2To120()
    {
        Assert.Equal(UInt128.Parse("1329227995784915872903807060280344576", System.Globalization.CultureInfo.InvariantCulture), AckCredit.Full);
        Assert.Equal(UInt128.One << 120, AckCredit.Full);
    }

    [Theory]
    [InlineData(2, 1, 1)]
    [InlineData(3, 1, 2)]
    [InlineData(7, 3, 4)]
    [InlineData(1000, 500, 500)]
    public void TrySplitHalf_SplitsExactly_OddUnitStaysWithTheCaller(long credit, long share, long left)
    {
        UInt128 c = (UInt128)credit;
        Assert.True(AckCredit.TrySplitHalf(ref c, out UInt128 s));
        Assert.Equal((UInt128)share, s);
        Assert.Equal((UInt128)left, c);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    public void TrySplitHalf_BelowTwoUnits_RefusesAndKeepsCredit(long credit)
    {
        UInt128 c = (UInt128)credit;
        Assert.False(AckCredit.TrySplitHalf(ref c, out UInt128 share));
        Assert.Equal(UInt128.Zero, share);
        Assert.Equal((UInt128)credit, c);
    }

    [Fact]
    public void TrySplitHalf_FromFull_AllowsExactly120NestedHalvings()
    {
        UInt128 credit = AckCredit.Full;
        int splits = 0;
        while (AckCredit.TrySplitHalf(ref credit, out UInt128 share))
        {
            // A nested call passes its share on: the callee's credit is the next to split.
            Assert.Equal(credit, share);
            credit = share;
            splits++;
        }

        Assert.Equal(120, splits);
        Assert.Equal(UInt128.One, credit);
    }

    [Fact]
    public void TrySplitHalf_RandomCredits_SumIsExact()
    {
        var random = new Random(12);
        for (int i = 0; i < 10_000; i++)
        {
            UInt128 credit = RandomCredit(random);
            UInt128 before = credit;
            bool split = AckCredit.TrySplitHalf(ref credit, out UInt128 share);
            Assert.Equal(before >= 2, split);
            Assert.Equal(before, credit + share);
            if (split)
            {
                Assert.True(share >= 1 && credit >= share && credit - share <= 1, $"{before} split into {share} and {credit}");
            }
        }
    }

    [Theory]
    [InlineData(10, 3, new long[] { 4, 3, 3 })]
    [InlineData(9, 3, new long[] { 3, 3, 3 })]
    [InlineData(8, 8, new long[] { 1, 1, 1, 1, 1, 1, 1, 1 })]
    [InlineData(15, 8, new long[] { 8, 1, 1, 1, 1, 1, 1, 1 })]
    [InlineData(5, 1, new long[] { 5 })]
    public void TrySplitEven_SplitsEvenly_RemainderToTheFirst(long credit, int count, long[] expected)
    {
        var shares = new UInt128[count];
        Assert.True(AckCredit.TrySplitEven((UInt128)credit, count, shares));
        Assert.Equal(expected.Select(e => (UInt128)e), shares);
    }

    [Theory]
    [InlineData(0, 1)]
    [InlineData(2, 3)]
    [InlineData(7, 8)]
    public void TrySplitEven_ShareBelowOneUnit_Refuses(long credit, int count)
    {
        Assert.False(AckCredit.TrySplitEven((UInt128)credit, count, new UInt128[count]));
    }

    [Fact]
    public void TrySplitEven_BadCount_Throws()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => AckCredit.TrySplitEven(AckCredit.Full, 0, new UInt128[1]));
        Assert.Throws<ArgumentOutOfRangeException>(() => AckCredit.TrySplitEven(AckCredit.Full, -1, new UInt128[1]));
        Assert.Throws<ArgumentOutOfRangeException>(() => AckCredit.TrySplitEven(AckCredit.Full, 3, new UInt128[2]));
    }

    [Fact]
    public void TrySplitEven_RandomCredits_SumIsExact()
    {
        var random = new Random(13);
        var shares = new UInt128[300];
        for (int i = 0; i < 10_000; i++)
        {
            UInt128 credit = RandomCredit(random);
            int count = random.Next(1, shares.Length + 1);
            bool split = AckCredit.TrySplitEven(credit, count, shares);
            Assert.Equal(credit >= (UInt128)count, split);
            if (!split)
            {
                continue;
            }

            UInt128 sum = UInt128.Zero;
            for (int j = 0; j < count; j++)
            {
                sum += shares[j];
                Assert.True(shares[j] >= 1);
                Assert.True(j == 0 || shares[j] == shares[1], $"credit {credit} over {count}: share {j} is {shares[j]}, share 1 is {shares[1]}");
            }

            Assert.Equal(credit, sum);
            Assert.True(count == 1 || shares[0] - shares[1] < (UInt128)count, $"credit {credit} over {count}: remainder {shares[0] - shares[1]}");
        }
    }

    /// <summary>
    /// 10,000 random call graphs (awaited, started-then-joined, never-awaited and one-way calls; fan-out 0..8; depth up
    /// to 16; some nodes throwing, some passing a failure on), each delivered in a random order: the transaction
    /// completes exactly once, only after every body that started has ended, with exactly the nodes the program
    /// reaches having run, the ledger at exactly <see cref="AckCredit.Full"/>, and the abort the call graph's order says.
    /// </summary>
    [Fact]
    public void RandomCallGraphs_RandomDelivery_CompleteOnceWithExactCredit()
    {
        var coverage = new GraphCoverage();
        (int first, int count) = Seeds();
        var failed = new List<(int Seed, Exception Error)>();
        for (int seed = first; seed < first + count; seed++)
        {
            try
            {
                RunRandomGraph(seed, coverage);
            }
            catch (Exception e)
            {
                failed.Add((seed, e));
            }
        }

        if (failed.Count > 0)
        {
            (int seed, Exception error) = failed[0];
            Assert.Fail(
                $"{failed.Count} of {count} graph seeds failed ({string.Join(", ", failed.Take(20).Select(f => f.Seed))}{(failed.Count > 20 ? ", ..." : "")}); "
                + $"replay one with DSE_FUNCTIONS_SEED=<seed> dotnet test -c Release --filter \"FullyQualifiedName~AckCreditTests.RandomCallGraphs\". "
                + $"Failures by kind: {string.Join("; ", failed.GroupBy(f => FirstLine(f.Error)).Select(g => $"{g.Count()} x {g.Key} (first seed {g.First().Seed})"))}. "
                + $"Seed {seed}:\n{error}");
        }

        if (count == GraphCount)
        {
            // The generator reached what B.2 asks for; a change that stops it doing so fails here.
            Assert.Equal(MaxDepth, coverage.MaxDepth);
            Assert.Equal(MaxFanOut, coverage.MaxFanOut);
            Assert.All(Enum.GetValues<GraphStepKind>(), kind => Assert.True(coverage.Kinds.Contains(kind), $"no {kind} step"));
            Assert.True(coverage.Committed > GraphCount / 4, $"{coverage.Committed} committed");
            Assert.True(coverage.Aborted > GraphCount / 4, $"{coverage.Aborted} aborted");
            Assert.True(coverage.RootNotLastToEnd > GraphCount / 20, $"the root's body was the last to end in all but {coverage.RootNotLastToEnd} graphs");
        }
    }

    /// <summary>
    /// Two branches throw (an awaited call the root started, and a one-way call) while sibling chains still run: the
    /// transaction completes only after every reachable body ran and ended, and reports the first failure in call order.
    /// When the root passes the failure on, its one-way calls never start and completion waits for the rest.
    /// </summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void AbortingBranch_SiblingsStillRunning_CompletionWaitsForThem(bool rootRethrows)
    {
        // 0: start 1 (throws), start 2 (chain 2-5-6-7-8), one-way 3 (throws), one-way 4 (chain 4-9-10-11-12), join.
        var nodes = new GraphSpec[13];
        nodes[0] = new GraphSpec(0, false, rootRethrows,
            [new(GraphStepKind.Start, 1), new(GraphStepKind.Start, 2), new(GraphStepKind.OneWay, 3), new(GraphStepKind.OneWay, 4), new(GraphStepKind.Join, -1)]);
        nodes[1] = new GraphSpec(1, true, false, []);
        nodes[3] = new GraphSpec(3, true, false, []);
        int[][] chains = [[2, 5, 6, 7, 8], [4, 9, 10, 11, 12]];
        foreach (int[] chain in chains)
        {
            for (int i = 0; i < chain.Length; i++)
            {
                nodes[chain[i]] = new GraphSpec(chain[i], false, false, i + 1 < chain.Length ? [new(GraphStepKind.Await, chain[i + 1])] : []);
            }
        }

        int[] expected = rootRethrows ? [0, 1, 2, 5, 6, 7, 8] : [.. Enumerable.Range(0, 13)];
        int failedFirst = 0;
        for (int seed = 0; seed < 300; seed++)
        {
            (TxRun tx, GraphProbe probe, RandomOrderSite site) = RunGraph(nodes, seed, SiteCallDepth, onComplete: (tx, probe, site) =>
            {
                Assert.Empty(probe.Running);
                Assert.Equal(expected, probe.Started.Order());
            });

            Assert.Equal(1, site.Completions);
            Assert.Equal(AckCredit.Full, tx.Ledger);
            Assert.Equal(NodeFailure(1), tx.Signals.Abort);
            int lastOfChains = rootRethrows ? probe.EndOrder(8) : Math.Max(probe.EndOrder(8), probe.EndOrder(12));
            int failing = rootRethrows ? probe.EndOrder(1) : Math.Max(probe.EndOrder(1), probe.EndOrder(3));
            if (failing < lastOfChains)
            {
                failedFirst++;
            }
        }

        // The interesting orders happened: the failing branches had ended while a sibling chain still ran.
        Assert.True(failedFirst > 100, $"the failing branches ended before the chains in {failedFirst} of 300 orders");
    }

    /// <summary>
    /// A one-way call that makes one-way calls passes all its credit on and returns zero credit (with its signals) to
    /// the root. Its children's credit can reach the root first (from another partition, or in any order here): the
    /// transaction must still complete exactly once, after the zero-credit return.
    /// </summary>
    [Fact]
    public void OneWayCallMakingOneWayCalls_AnyDeliveryOrder_CompletesExactlyOnce()
    {
        // 0: one-way 1. 1: one-way 2.
        GraphSpec[] graph = [new(0, false, false, [new(GraphStepKind.OneWay, 1)]), new(1, false, false, [new(GraphStepKind.OneWay, 2)]), new(2, false, false, [])];
        AllOrders(graph, expectedAbort: null);
    }

    /// <summary>
    /// The same shape with a failure the one-way call caught: the failure travels only with the zero-credit return, so
    /// a transaction completed before that return arrived would commit although a call threw.
    /// </summary>
    [Fact]
    public void OneWayCallWithCaughtFailure_ThenOneWayCall_AbortsInEveryDeliveryOrder()
    {
        // 0: one-way 1. 1: await 2 (throws, caught), one-way 3.
        GraphSpec[] graph =
        [
            new(0, false, false, [new(GraphStepKind.OneWay, 1)]),
            new(1, false, false, [new(GraphStepKind.Await, 2), new(GraphStepKind.OneWay, 3)]),
            new(2, true, false, []),
            new(3, false, false, []),
        ];
        AllOrders(graph, expectedAbort: NodeFailure(2));
    }

    /// <summary>A chain of nested awaited calls deeper than the credit's 120 halvings: a deterministic limit abort.</summary>
    [Fact]
    public void NestedAwaitChain_Beyond120_AbortsWithCallGraphLimit_SameOnEveryRun()
    {
        GraphSpec[] chain = Chain(130, GraphStepKind.Await);
        var aborts = new List<EntityAbort?>();
        for (int seed = 0; seed < 2; seed++)
        {
            (TxRun tx, GraphProbe probe, RandomOrderSite site) = RunGraph(chain, seed, SiteCallDepth);
            Assert.Equal(1, site.Completions);
            Assert.Equal(AckCredit.Full, tx.Ledger);

            // Depth d holds 2^(120-d): the call at depth 120 holds one unit and cannot split it for depth 121.
            Assert.Equal(Enumerable.Range(0, 121), probe.Started.Order());
            aborts.Add(tx.Signals.Abort);
        }

        EntityAbort abort = Assert.IsType<EntityAbort>(aborts[0]);
        Assert.Equal(typeof(CallGraphLimitException).FullName, abort.ExceptionType);
        Assert.Contains("GraphNodeEntity(121).Run", abort.Message, StringComparison.Ordinal);
        Assert.Contains("completion credit is used up", abort.Message, StringComparison.Ordinal);
        Assert.Equal(aborts[0], aborts[1]);
    }

    /// <summary>The same limit through the public serial runner: the client sees the same exception on two runs.</summary>
    [Fact]
    public async Task NestedAwaitChain_Beyond120_SerialRunner_SameExceptionTwice()
    {
        GraphSpec[] chain = Chain(130, GraphStepKind.Await);
        var seen = new List<(string, string)>();
        for (int run = 0; run < 2; run++)
        {
            var runner = new SerialEntityRunner(e => e.Add<GraphNodeEntity>(), maxCallDepth: SiteCallDepth);
            Task<int> call;
            using (GraphProbe.Install(new GraphProbe(chain)))
            {
                // The serial runner runs the transaction before the call returns, on this thread.
                call = runner.Client.Get<IGraphNode>(0).Run(chain[0]);
            }

            Assert.True(call.IsCompleted);
            var e = await Assert.ThrowsAsync<EntityTransactionAbortedException>(() => call);
            seen.Add((e.ExceptionType, e.AbortMessage));
            Assert.Equal(0, runner.GetState<IGraphNode, int>(0));
        }

        Assert.Equal(typeof(CallGraphLimitException).FullName, seen[0].Item1);
        Assert.Equal(seen[0], seen[1]);
    }

    /// <summary>
    /// At depth 117 a call holds 2^3 units, split evenly between its one-way calls and its own return: seven one-way
    /// calls get one each and the transaction commits; eight cannot be split and abort it, the same on every delivery
    /// order.
    /// </summary>
    [Theory]
    [InlineData(7, false)]
    [InlineData(8, true)]
    public void OneWayFanOut_BeyondItsCredit_AbortsWithCallGraphLimit(int oneWays, bool aborts)
    {
        var nodes = new List<GraphSpec>(Chain(118, GraphStepKind.Await));
        GraphStep[] fan = [.. Enumerable.Range(118, oneWays).Select(child => new GraphStep(GraphStepKind.OneWay, child))];
        nodes[117] = nodes[117] with { Steps = fan };
        for (int i = 0; i < oneWays; i++)
        {
            nodes.Add(new GraphSpec(118 + i, false, false, []));
        }

        GraphSpec[] graph = [.. nodes];
        var seen = new List<EntityAbort?>();
        for (int seed = 0; seed < 2; seed++)
        {
            (TxRun tx, GraphProbe probe, RandomOrderSite site) = RunGraph(graph, seed, SiteCallDepth);
            Assert.Equal(1, site.Completions);
            Assert.Equal(AckCredit.Full, tx.Ledger);
            Assert.Equal(aborts ? 118 : 118 + oneWays, probe.Started.Count);
            seen.Add(tx.Signals.Abort);
        }

        Assert.Equal(seen[0], seen[1]);
        if (aborts)
        {
            EntityAbort abort = Assert.IsType<EntityAbort>(seen[0]);
            Assert.Equal(typeof(CallGraphLimitException).FullName, abort.ExceptionType);
            Assert.Equal("GraphNodeEntity(117).Run made 8 one-way calls, more than its completion credit can be split into.", abort.Message);
        }
        else
        {
            Assert.Null(seen[0]);
        }
    }

    /// <summary>
    /// A one-way call shares its caller's credit with the caller's own return, so a chain of them halves it like
    /// awaited calls do: 100 links (deeper than any call depth a runtime allows) commit, 130 abort with the limit.
    /// </summary>
    [Theory]
    [InlineData(100, false)]
    [InlineData(130, true)]
    public void OneWayChain_IsLimitedLikeNesting(int length, bool aborts)
    {
        GraphSpec[] chain = Chain(length, GraphStepKind.OneWay);
        (TxRun tx, GraphProbe probe, RandomOrderSite site) = RunGraph(chain, seed: 5, SiteCallDepth);
        Assert.Equal(1, site.Completions);
        Assert.Equal(AckCredit.Full, tx.Ledger);
        if (aborts)
        {
            Assert.Equal(typeof(CallGraphLimitException).FullName, tx.Signals.Abort?.ExceptionType);
        }
        else
        {
            Assert.Null(tx.Signals.Abort);
            Assert.Equal(length, probe.Started.Count);
        }
    }

    private static EntityAbort NodeFailure(int node) =>
        new(typeof(GraphNodeFailedException).FullName!, $"node {node} failed", "GraphNodeEntity", $"{node}");

    private static string FirstLine(Exception e) => $"{e.GetType().Name}: {e.Message.Split('\n')[0]}";

    private static (int First, int Count) Seeds() =>
        int.TryParse(Environment.GetEnvironmentVariable("DSE_FUNCTIONS_SEED"), out int one) ? (one, 1) : (0, GraphCount);

    private static GraphSpec[] Chain(int length, GraphStepKind kind) =>
        [.. Enumerable.Range(0, length).Select(i => new GraphSpec(i, false, false, i + 1 < length ? [new GraphStep(kind, i + 1)] : []))];

    private static void RunRandomGraph(int seed, GraphCoverage coverage)
    {
        var random = new Random(seed);
        GraphSpec[] graph = RandomGraph(random, coverage);
        var expected = new ExpectedRun();
        Simulate(graph, 0, [], expected);
        int deliverySeed = random.Next();
        int[]? first = expected.FirstFailure();
        EntityAbort? expectedAbort = first is null ? null : NodeFailure(expected.Failures[first]);

        (TxRun tx, GraphProbe probe, RandomOrderSite site) = RunGraph(graph, deliverySeed, SiteCallDepth, onComplete: (tx, probe, site) =>
        {
            // At the moment of completion: nothing runs, exactly the reachable nodes ran, each once, and every
            // failure has arrived.
            Assert.Equal(1, site.Completions);
            Assert.Equal(AckCredit.Full, tx.Ledger);
            Assert.Empty(probe.Running);
            Assert.Equal(expected.Executed.Order(), probe.Started.Order());
            Assert.Equal(expectedAbort, tx.Signals.Abort);
        });

        Assert.Equal(1, site.Completions);
        Assert.True(tx.Completed);
        Assert.Equal(AckCredit.Full, tx.Ledger);

        // Every node that ran wrote its own entity once (read, then write), and nothing else was touched.
        Assert.Equal(expected.Executed.Count, site.Slots.Count);
        foreach (KeySlot slot in site.Slots.Values)
        {
            Assert.True(expected.Executed.Contains((int)slot.Address.Key), $"slot {slot.Address} of a node that should not run");
            Assert.True(slot.Read && slot.Written && slot.Value is 1, $"slot {slot.Address}: read {slot.Read}, written {slot.Written}, value {slot.Value}");
        }

        Assert.Equal(expectedAbort, tx.Signals.Abort);
        if (expectedAbort is null)
        {
            Assert.Equal(0, WireFormat.Decode<int>(tx.RootResult));
            coverage.Committed++;
        }
        else
        {
            coverage.Aborted++;
        }

        Assert.Null(tx.Signals.Race);
        if (probe.Ended.Count > 1 && probe.Ended[^1] != 0)
        {
            coverage.RootNotLastToEnd++;
        }
    }

    /// <summary>Runs <paramref name="graph"/> in 200 delivery orders; each must complete once, with every node run and the abort known.</summary>
    private static void AllOrders(GraphSpec[] graph, EntityAbort? expectedAbort)
    {
        var failed = new List<string>();
        for (int seed = 0; seed < 200; seed++)
        {
            try
            {
                (TxRun tx, GraphProbe probe, RandomOrderSite site) = RunGraph(graph, seed, SiteCallDepth, onComplete: (tx, probe, site) =>
                {
                    Assert.Equal(graph.Length, probe.Started.Count);
                    Assert.Empty(probe.Running);
                    Assert.Equal(expectedAbort, tx.Signals.Abort);
                });
                Assert.Equal(1, site.Completions);
            }
            catch (Exception e)
            {
                failed.Add($"delivery seed {seed}: {(failed.Count == 0 ? e.ToString() : FirstLine(e))}");
            }
        }

        Assert.True(failed.Count == 0, $"{failed.Count} of 200 delivery orders failed:\n{string.Join("\n", failed.Take(5))}");
    }

    private static (TxRun Tx, GraphProbe Probe, RandomOrderSite Site) RunGraph(
        GraphSpec[] graph, int seed, int maxCallDepth, Action<TxRun, GraphProbe, RandomOrderSite>? onComplete = null)
    {
        var probe = new GraphProbe(graph);
        var site = new RandomOrderSite(Registry, maxCallDepth, seed);
        site.OnComplete = tx => onComplete?.Invoke(tx, probe, site);
        EntityType type = Registry.ForClass(typeof(GraphNodeEntity));
        var request = new TransactionRequest(1, Registry.Address(type, 0), "Run", WireFormat.Encode(graph[0]));
        using (GraphProbe.Install(probe))
        {
            TxRun tx = site.Run(request);
            return (tx, probe, site);
        }
    }

    /// <summary>A random graph of at most 64 nodes, node 0 the root, built depth first so that chains reach depth 16.</summary>
    private static GraphSpec[] RandomGraph(Random random, GraphCoverage coverage)
    {
        int budget = random.Next(4) == 0 ? random.Next(1, 9) : random.Next(1, MaxNodes + 1);
        double throwRate = random.Next(2) == 0 ? 0 : random.Next(1, 4) / 20.0;
        bool chainy = random.Next(5) == 0;
        var nodes = new List<GraphSpec?> { null };
        Build(0, 0);
        return [.. nodes.Select(n => n!)];

        void Build(int id, int depth)
        {
            coverage.MaxDepth = Math.Max(coverage.MaxDepth, depth);
            int fanOut = depth >= MaxDepth ? 0 : chainy ? random.Next(0, 3) : random.Next(0, MaxFanOut + 1);
            var steps = new List<GraphStep>();
            int calls = 0;
            for (int k = 0; k < fanOut && nodes.Count < budget; k++)
            {
                if (random.Next(5) == 0)
                {
                    steps.Add(new GraphStep(GraphStepKind.Join, -1));
                    coverage.Kinds.Add(GraphStepKind.Join);
                }

                int child = nodes.Count;
                nodes.Add(null);
                int roll = random.Next(100);
                GraphStepKind kind = roll < 30 ? GraphStepKind.Await : roll < 55 ? GraphStepKind.Start : roll < 65 ? GraphStepKind.Forget : GraphStepKind.OneWay;
                coverage.Kinds.Add(kind);
                steps.Add(new GraphStep(kind, child));
                calls++;
                Build(child, depth + 1);
            }

            coverage.MaxFanOut = Math.Max(coverage.MaxFanOut, calls);
            nodes[id] = new GraphSpec(id, random.NextDouble() < throwRate, random.Next(3) == 0, [.. steps]);
        }
    }

    /// <summary>
    /// What the program says a graph does, worked out from the specs alone: which nodes run, and which throw (with
    /// their call paths). A failed body's one-way calls never start; a body that passes a failure on stops there.
    /// </summary>
    /// <returns>Whether the node's body failed (what its awaiting caller sees).</returns>
    private static bool Simulate(GraphSpec[] graph, int id, int[] path, ExpectedRun expected)
    {
        GraphSpec spec = graph[id];
        expected.Executed.Add(id);
        var oneWays = new List<(int Child, int[] Path)>();
        var started = new List<bool>();
        bool stopped = false;
        int index = 0;
        foreach (GraphStep step in spec.Steps)
        {
            if (step.Kind == GraphStepKind.Join)
            {
                stopped = spec.Rethrow && started.Contains(true);
                started.Clear();
            }
            else
            {
                int[] childPath = [.. path, index++];
                switch (step.Kind)
                {
                    case GraphStepKind.Await:
                        stopped = Simulate(graph, step.Child, childPath, expected) && spec.Rethrow;
                        break;
                    case GraphStepKind.Start:
                        started.Add(Simulate(graph, step.Child, childPath, expected));
                        break;
                    case GraphStepKind.Forget:
                        Simulate(graph, step.Child, childPath, expected);
                        break;
                    case GraphStepKind.OneWay:
                        oneWays.Add((step.Child, childPath));
                        break;
                }
            }

            if (stopped)
            {
                break;
            }
        }

        stopped = stopped || (spec.Rethrow && started.Contains(true));
        if (!stopped && spec.Throws)
        {
            expected.Failures.Add(path, id);
        }

        bool failed = stopped || spec.Throws;
        if (!failed)
        {
            foreach ((int child, int[] childPath) in oneWays)
            {
                Simulate(graph, child, childPath, expected);
            }
        }

        return failed;
    }

    private static UInt128 RandomCredit(Random random) => random.Next(4) switch
    {
        0 => (UInt128)random.Next(0, 20),
        1 => AckCredit.Full >> random.Next(0, 121),
        _ => new UInt128((ulong)random.NextInt64(1L << 56) >> random.Next(0, 57), (ulong)random.NextInt64()),
    };

    private sealed class ExpectedRun
    {
        public HashSet<int> Executed { get; } = [];

        /// <summary>The nodes that throw, by call path.</summary>
        public Dictionary<int[], int> Failures { get; } = [];

        /// <summary>The failure the transaction reports: a descendant's before its ancestor's, else the lower call index first.</summary>
        public int[]? FirstFailure()
        {
            int[]? first = null;
            foreach (int[] path in Failures.Keys)
            {
                if (first is null || ComesFirst(path, first))
                {
                    first = path;
                }
            }

            return first;
        }

        private static bool ComesFirst(int[] a, int[] b)
        {
            for (int i = 0; i < Math.Min(a.Length, b.Length); i++)
            {
                if (a[i] != b[i])
                {
                    return a[i] < b[i];
                }
            }

            return a.Length > b.Length;
        }
    }

    private sealed class GraphCoverage
    {
        public int MaxDepth { get; set; }

        public int MaxFanOut { get; set; }

        public HashSet<GraphStepKind> Kinds { get; } = [];

        public int Committed { get; set; }

        public int Aborted { get; set; }

        public int RootNotLastToEnd { get; set; }
    }
}
