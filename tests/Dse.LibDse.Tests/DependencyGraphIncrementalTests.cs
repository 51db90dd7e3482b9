using System.Globalization;
using Xunit.Abstractions;

namespace Dse.Tests;

/// <summary>
/// The incremental closure of <see cref="DependencyGraph"/> against its specification, <see cref="DependencyGraph.ComputeClosure"/>:
/// a seeded differential test over random operations, and hand-built cycles and blocked chains.
/// </summary>
[Trait("Category", "Simulation")]
public class DependencyGraphIncrementalTests(ITestOutputHelper output)
{
    private const int DefaultSeeds = 500;
    private const int OperationsPerSeed = 400;

    // Referenced by dependencies, registered by no one until an AddParticipant operation picks it.
    private const long LateId = 90;

    // Referenced by dependencies, never registered.
    private const long UnknownId = 99;

    [Fact]
    public void Incremental_RandomOperations_MatchesComputeClosureAfterEveryOperation()
    {
        var (first, count) = SeedRange();
        var total = new Counts();
        for (int seed = first; seed < first + count; seed++)
        {
            try
            {
                total.Add(RunSeed(seed));
            }
            catch (Exception ex)
            {
                throw new DifferentialFailedException(
                    $"Differential run failed with seed {seed}: {ex.Message}{Environment.NewLine}Replay it with: DSE_GRAPH_SEED={seed} dotnet test tests/Dse.LibDse.Tests --filter FullyQualifiedName~DependencyGraphIncrementalTests",
                    ex);
            }
        }

        output.WriteLine($"{count} seeds from {first}: {total}");

        // The runs must exercise the incremental path and every rare path, or agreeing means little.
        Assert.True(total.IncrementalAdvances > 4 * total.FullRecomputes, $"too few incremental advances: {total}");
        Assert.True(total.Moves > 0 && total.CyclesClosed > 0 && total.OutOfOrder > 0 && total.Rare > 0, $"the runs did not exercise the graph: {total}");
    }

    [Fact]
    public void AddAndAdvance_TwoVersionCycle_CommitsBothWhenTheLastEdgeResolves()
    {
        var g = Graph(1, 2);
        g.AdvanceCommitted();
        int full = g.FullRecomputeCount;

        g.Add(1, V(1, D(2, 1)));
        Assert.False(Advance(g));
        g.Add(2, V(1, D(1, 1)));
        Assert.True(Advance(g));

        Assert.Equal(1, g.CommittedVersion(1));
        Assert.Equal(1, g.CommittedVersion(2));
        Assert.Equal(full, g.FullRecomputeCount);
    }

    [Fact]
    public void AddAndAdvance_ThreeParticipantCycleWithAnOutsideEdge_WaitsForTheOutsideVersion()
    {
        var g = Graph(1, 2, 3, 4);
        g.AdvanceCommitted();
        int full = g.FullRecomputeCount;

        g.Add(1, V(1, D(2, 1)));
        g.Add(2, V(1, D(3, 1), D(4, 2)));
        g.Add(3, V(1, D(1, 1)));
        Assert.False(Advance(g));
        g.Add(4, V(1));
        Assert.True(Advance(g));
        Assert.Equal(0, g.CommittedVersion(1));
        Assert.Equal(1, g.CommittedVersion(4));

        g.Add(4, V(2));
        Assert.True(Advance(g));

        Assert.Equal(1, g.CommittedVersion(1));
        Assert.Equal(1, g.CommittedVersion(2));
        Assert.Equal(1, g.CommittedVersion(3));
        Assert.Equal(2, g.CommittedVersion(4));
        Assert.Equal(full, g.FullRecomputeCount);
    }

    [Fact]
    public void AddAndAdvance_CycleThroughTheReporterOwnChain_Commits()
    {
        // 1@2 depends on 2@1, which depends on 1@1: a cycle only through 1's chain once 2 reports.
        var g = Graph(1, 2);
        g.AdvanceCommitted();
        g.Add(1, V(1, D(2, 1)));
        g.Add(1, V(2));
        Assert.False(Advance(g));
        g.Add(2, V(1, D(1, 2)));
        Assert.True(Advance(g));

        Assert.Equal(2, g.CommittedVersion(1));
        Assert.Equal(1, g.CommittedVersion(2));
    }

    [Fact]
    public void AddAndAdvance_LongChainBlockedAtItsBottom_StaysIncrementalAndCommitsAtOnce()
    {
        const int Length = 20_000;
        var g = Graph(1, 2, 3);
        g.AdvanceCommitted();
        int full = g.FullRecomputeCount;

        // 1's first version waits for 2, which has stopped reporting; 1 goes on, and each version of 3 waits for 1's next
        // one, so every report of 1 resolves a waiter and searches from its new version (which reaches 1@1).
        g.Add(1, V(1, D(2, 1)));
        for (int v = 2; v <= Length; v++)
        {
            g.Add(1, V(v));
            g.Add(3, V(v - 1, D(1, v + 1)));
            Assert.False(g.AdvanceCommitted());
        }

        g.Add(1, V(Length + 1));
        Assert.False(g.AdvanceCommitted());
        Assert.Equal(0, g.CommittedVersion(1));
        Assert.Equal(0, g.CommittedVersion(3));
        Assert.Equal(2 * Length, g.UncommittedCount);

        // Each search stopped at 1's blocked bottom at once: linear in the reports, not quadratic.
        Assert.True(g.SearchedNodes < 4 * Length, $"{g.SearchedNodes} nodes searched for {2 * Length} reports");

        g.Add(2, V(1));
        Assert.True(Advance(g));

        Assert.Equal(Length + 1, g.CommittedVersion(1));
        Assert.Equal(Length - 1, g.CommittedVersion(3));
        Assert.Equal(0, g.UncommittedCount);
        Assert.Equal(full, g.FullRecomputeCount);
    }

    [Fact]
    public void AddAndAdvance_LaggingPeerResolvesWaitersInABlockedChain_SearchesStayLinear()
    {
        const int Length = 20_000;
        const int Lag = 10_000;
        var g = Graph(1, 2, 3);
        g.AdvanceCommitted();

        // 1 is blocked at its bottom (2 stopped) and each of its versions waits for 3's same version; 3 lags far behind,
        // so each report of 3 resolves a waiter deep inside 1's blocked chain, with everything above it an ancestor.
        g.Add(1, V(1, D(2, 1)));
        for (int v = 2; v <= Length; v++)
        {
            g.Add(1, V(v, D(3, v)));
            if (v > Lag)
            {
                g.Add(3, V(v - Lag));
                Assert.True(g.AdvanceCommitted());
            }
        }

        Assert.Equal(0, g.CommittedVersion(1));
        Assert.Equal(Length - Lag, g.CommittedVersion(3));
        Assert.True(g.SearchedNodes < 4 * Length, $"{g.SearchedNodes} nodes searched for {2 * Length - Lag} reports");

        for (int v = Length - Lag + 1; v <= Length; v++)
        {
            g.Add(3, V(v));
        }

        g.Add(2, V(1));
        Assert.True(Advance(g));
        Assert.Equal(Length, g.CommittedVersion(1));
        Assert.Equal(Length, g.CommittedVersion(3));
    }

    [Fact]
    public void AddAndAdvance_BlockedRegionWithCycles_ClosesOnlyWhatNoLongerDangles()
    {
        // 1 and 2 depend on each other's next versions round after round; 2's round 3 also waits for 3.
        var g = Graph(1, 2, 3);
        g.AdvanceCommitted();
        for (int v = 1; v <= 5; v++)
        {
            g.Add(1, V(v, D(2, v)));
            var deps = v == 3 ? new[] { D(1, v), D(3, 1) } : new[] { D(1, v) };
            g.Add(2, new VersionReport(v, 0, deps));
            Advance(g);
        }

        Assert.Equal(2, g.CommittedVersion(1));
        Assert.Equal(2, g.CommittedVersion(2));

        g.Add(3, V(1));
        Assert.True(Advance(g));
        Assert.Equal(5, g.CommittedVersion(1));
        Assert.Equal(5, g.CommittedVersion(2));
    }

    [Fact]
    public void Add_OutOfOrderReport_FallsBackToAFullRecomputeThatAgrees()
    {
        var g = Graph(1, 2);
        g.AdvanceCommitted();
        g.Add(1, V(1, D(2, 2)));
        g.Add(1, V(5));
        g.Add(2, V(3));
        Assert.True(Advance(g));
        Assert.Equal(5, g.CommittedVersion(1));
        int full = g.FullRecomputeCount;

        // 2@2 arrives after 2@3: 1's next version depending on it resolved to 2@3 and now resolves to 2@2.
        g.Add(1, V(6, D(2, 4)));
        g.Add(2, V(4, D(1, 7)));
        g.Add(2, V(2 + 10));
        Assert.True(g.IsIncremental);
        Assert.Equal(ReportOutcome.Accepted, g.Add(2, V(10)));
        Assert.False(g.IsIncremental);
        Advance(g);

        Assert.Equal(full + 1, g.FullRecomputeCount);
        Assert.True(g.IsIncremental);
    }

    [Fact]
    public void AddParticipant_ReferencedBeforeItRegistered_ResolvesItsWaitersAfterwards()
    {
        var g = Graph(1);
        g.AdvanceCommitted();
        g.Add(1, V(1, D(7, 1)));
        Assert.False(Advance(g));

        g.AddParticipant(7);
        Assert.False(g.IsIncremental);
        Assert.False(Advance(g));
        g.Add(7, V(1));
        Assert.True(Advance(g));

        Assert.Equal(1, g.CommittedVersion(1));
        Assert.Equal(1, g.CommittedVersion(7));
    }

    [Fact]
    public void AddParticipant_NothingDependsOnIt_KeepsTheStateIncremental()
    {
        var g = Graph(1);
        g.AdvanceCommitted();
        g.Add(1, V(1));

        g.AddParticipant(2);

        Assert.True(g.IsIncremental);
        Assert.True(Advance(g));
    }

    [Fact]
    public void CommittedSnapshot_TakenEarlier_NeverChanges()
    {
        var g = Graph(1, 2);
        g.Add(1, V(1));
        g.AdvanceCommitted();
        var before = g.CommittedSnapshot();

        g.Add(1, V(2));
        g.Add(2, V(3, D(1, 2)));
        g.AdvanceCommitted();
        g.AddParticipant(3);
        var after = g.CommittedSnapshot();

        Assert.Equal([new(1, 1), new(2, 0)], before.ToArray());
        Assert.Equal(2, before.Count);
        Assert.False(before.ContainsKey(3));
        Assert.Equal([new(1, 2), new(2, 3), new(3, 0)], after.ToArray());
        Assert.Equal(3, after[2]);
        Assert.True(after.TryGetValue(3, out long v3) && v3 == 0);
        Assert.False(after.TryGetValue(4, out _));
        Assert.Throws<KeyNotFoundException>(() => after[4]);
        Assert.Equal([1L, 2L, 3L], after.Keys);
        Assert.Equal([2L, 3L, 0L], after.Values);
    }

    private static DependencyGraph Graph(params long[] ids)
    {
        var g = new DependencyGraph();
        foreach (var id in ids)
        {
            g.AddParticipant(id);
        }

        return g;
    }

    private static VersionReport V(long version, params Dependency[] deps) => new(version, 0, deps);

    private static Dependency D(long objectId, long version) => new(objectId, version);

    /// <summary>AdvanceCommitted, checked: the committed map becomes exactly the specification's closure.</summary>
    private static bool Advance(DependencyGraph g)
    {
        var expected = g.ComputeClosure();
        var incremental = g.IncrementalClosure();
        if (incremental is not null)
        {
            AssertSameMap(expected, incremental, "incremental closure before the advance");
        }

        var before = g.CommittedSnapshot();
        bool moved = g.AdvanceCommitted();
        var after = g.CommittedSnapshot();
        AssertSameMap(expected, after, "committed map after the advance");
        bool changed = false;
        foreach (var (id, version) in after)
        {
            changed |= version != before[id];
        }

        Assert.True(moved == changed, $"AdvanceCommitted returned {moved} but the committed map {(changed ? "changed" : "did not change")}.");
        return moved;
    }

    private static void AssertSameMap(IReadOnlyDictionary<long, long> expected, IReadOnlyDictionary<long, long> actual, string what)
    {
        Assert.True(expected.Count == actual.Count, $"{what}: {actual.Count} participants, the specification has {expected.Count}.");
        foreach (var (id, version) in expected)
        {
            Assert.True(actual.TryGetValue(id, out long v) && v == version, $"{what}: participant {id} at {(actual.ContainsKey(id) ? v.ToString(CultureInfo.InvariantCulture) : "missing")}, the specification says {version}. Specification: {Format(expected)}; actual: {Format(actual)}.");
        }
    }

    private static string Format(IReadOnlyDictionary<long, long> map) =>
        string.Join(", ", map.OrderBy(kv => kv.Key).Select(kv => $"{kv.Key}@{kv.Value}"));

    /// <summary>One seed: random operations, the incremental closure checked against the specification after each.</summary>
    private static Counts RunSeed(int seed)
    {
        var random = new Random(seed);
        int participants = random.Next(2, 7);
        var ids = new List<long>();
        var g = new DependencyGraph();
        for (int i = 1; i <= participants; i++)
        {
            ids.Add(i);
            g.AddParticipant(i);
        }

        var counts = new Counts();
        int fullAtStart = g.FullRecomputeCount;

        // The fragment of every version the graph accepted (the last one, if a version came back after a rollback).
        var fragments = new Dictionary<(long Id, long Version), IReadOnlyList<Dependency>>();

        // How far ahead dependencies and gaps reach: small makes cycles and resolutions frequent, large makes backlogs.
        int reach = random.Next(1, 4);
        int advanceEvery = random.Next(1, 4);

        // How often a dependency names an id that is not registered (never, or not yet): it blocks the version and its
        // chain for good (or until the id registers), so a few seeds block a lot and most block little or nothing.
        int blockerOdds = random.Next(3) switch
        {
            0 => 0,
            1 => 400,
            _ => 40,
        };
        for (int op = 0; op < OperationsPerSeed; op++)
        {
            // Mostly reports and advances; a rare path now and then (each makes the next advance a full recompute).
            int kind = random.Next(1000);
            if (kind < 840)
            {
                Report(random, g, ids, reach, blockerOdds, fragments, counts);
            }
            else if (kind < 985)
            {
                // Sometimes several reports go in before an advance, as while a recovering coordinator waits.
                if (random.Next(advanceEvery) == 0)
                {
                    bool wasIncremental = g.IsIncremental;
                    var before = g.CommittedSnapshot();
                    if (Advance(g))
                    {
                        counts.Moves++;
                        if (CommittedACycle(before, g.CommittedSnapshot(), fragments))
                        {
                            counts.CyclesClosed++;
                        }
                    }

                    if (wasIncremental)
                    {
                        counts.IncrementalAdvances++;
                    }
                }
            }
            else
            {
                Rare(random, g, ids, fragments, counts);
            }

            var incremental = g.IncrementalClosure();
            if (incremental is not null)
            {
                AssertSameMap(g.ComputeClosure(), incremental, $"incremental closure after operation {op}");
                counts.Comparisons++;
            }
        }

        counts.FullRecomputes += g.FullRecomputeCount - fullAtStart;
        return counts;
    }

    private static void Report(Random random, DependencyGraph g, List<long> ids, int reach, int blockerOdds, Dictionary<(long, long), IReadOnlyList<Dependency>> fragments, Counts counts)
    {
        long id = ids[random.Next(ids.Count)];
        long latest = g.LatestVersion(id);
        long committed = g.CommittedVersion(id);
        long version;
        int shape = random.Next(100);
        if (shape < 3 && latest - committed >= 2)
        {
            // Out of order: a gap below the latest (it may be a duplicate, which changes nothing).
            version = committed + 1 + random.Next((int)(latest - committed - 1));
        }
        else if (shape < 11)
        {
            // A duplicate: the latest again, or the committed version.
            version = Math.Max(1, random.Next(2) == 0 ? latest : committed);
        }
        else
        {
            version = latest + 1 + random.Next(reach);
        }

        int n = random.Next(4);
        var deps = new Dependency[n];
        for (int k = 0; k < n; k++)
        {
            long peer = random.Next(10) == 0 ? id : ids[random.Next(ids.Count)];
            if (blockerOdds > 0 && random.Next(blockerOdds) == 0)
            {
                peer = random.Next(2) == 0 ? UnknownId : LateId;
            }

            long peerLatest = g.LatestVersion(peer);
            long peerCommitted = g.CommittedVersion(peer);
            long v = random.Next(7) switch
            {
                0 => Math.Max(0, peerCommitted - random.Next(2)),
                1 or 2 => peerLatest,
                3 => Math.Max(0, peerLatest - 1),
                4 => peerLatest + 1,
                _ => peerLatest + 1 + random.Next(reach + 1),
            };
            deps[k] = new Dependency(peer, v);
        }

        if (g.Add(id, new VersionReport(version, random.Next(2), deps)) == ReportOutcome.Accepted)
        {
            fragments[(id, version)] = deps;
            if (version < latest)
            {
                counts.OutOfOrder++;
            }
        }
    }

    private static void Rare(Random random, DependencyGraph g, List<long> ids, Dictionary<(long, long), IReadOnlyList<Dependency>> fragments, Counts counts)
    {
        counts.Rare++;
        long id = ids[random.Next(ids.Count)];
        switch (random.Next(5))
        {
            case 0:
            {
                // A restart's listing: a prefix of what was reported, or versions it had not reported.
                long committed = g.CommittedVersion(id);
                var listing = new List<VersionReport>();
                long v = committed;
                int n = random.Next(4);
                for (int i = 0; i < n; i++)
                {
                    v += 1 + random.Next(2);
                    listing.Add(V(v, new Dependency(ids[random.Next(ids.Count)], random.Next(1, (int)v + 2))));
                }

                g.ReplaceUncommitted(id, listing);
                foreach (var r in listing)
                {
                    fragments[(id, r.Version)] = r.Dependencies;
                }
                break;
            }

            case 1:
            {
                // A decision: every participant cut somewhere between its committed and latest version.
                var cut = new Dictionary<long, long>();
                foreach (long p in ids)
                {
                    long committed = g.CommittedVersion(p);
                    cut[p] = committed + random.Next((int)(g.LatestVersion(p) - committed) + 1);
                }

                g.Apply(new RollbackDecision(1, id, cut));
                break;
            }

            case 2:
                g.RaiseCommitted(id, g.CommittedVersion(id) + random.Next(0, 3) + (random.Next(2) * (g.LatestVersion(id) - g.CommittedVersion(id))));
                break;
            case 3:
            {
                var cut = new Dictionary<long, long> { [id] = Math.Max(g.CommittedVersion(id), g.LatestVersion(id) - random.Next(3)) };
                g.TruncateAbove(cut);
                break;
            }

            default:
                if (!ids.Contains(LateId) && random.Next(2) == 0)
                {
                    ids.Add(LateId);
                    g.AddParticipant(LateId);
                }
                else
                {
                    long fresh = 100 + ids.Count;
                    ids.Add(fresh);
                    g.AddParticipant(fresh);
                }

                break;
        }
    }

    /// <summary>
    /// Whether an advance committed a dependency cycle across participants: versions a of A and b of B, both committed by
    /// it, where a depends on B at b's version or above and b on A at a's version or above (each then reaches the other).
    /// </summary>
    private static bool CommittedACycle(IReadOnlyDictionary<long, long> before, IReadOnlyDictionary<long, long> after, Dictionary<(long, long), IReadOnlyList<Dependency>> fragments)
    {
        foreach (var (a, aTo) in after)
        {
            for (long av = before.GetValueOrDefault(a) + 1; av <= aTo; av++)
            {
                if (!fragments.TryGetValue((a, av), out var aDeps))
                {
                    continue;
                }

                foreach (var toB in aDeps)
                {
                    long b = toB.ObjectId;
                    if (b == a || !after.TryGetValue(b, out long bTo))
                    {
                        continue;
                    }

                    for (long bv = before.GetValueOrDefault(b) + 1; bv <= Math.Min(bTo, toB.Version); bv++)
                    {
                        if (fragments.TryGetValue((b, bv), out var bDeps) && bDeps.Any(d => d.ObjectId == a && d.Version >= av))
                        {
                            return true;
                        }
                    }
                }
            }
        }

        return false;
    }

    private static (int First, int Count) SeedRange()
    {
        var single = Environment.GetEnvironmentVariable("DSE_GRAPH_SEED");
        if (!string.IsNullOrEmpty(single))
        {
            return (int.Parse(single, CultureInfo.InvariantCulture), 1);
        }

        var seeds = Environment.GetEnvironmentVariable("DSE_GRAPH_SEEDS");
        return (1, string.IsNullOrEmpty(seeds) ? DefaultSeeds : int.Parse(seeds, CultureInfo.InvariantCulture));
    }

    private sealed class Counts
    {
        public long Comparisons { get; set; }

        public long IncrementalAdvances { get; set; }

        public long FullRecomputes { get; set; }

        public long Moves { get; set; }

        public long CyclesClosed { get; set; }

        public long OutOfOrder { get; set; }

        public long Rare { get; set; }

        public void Add(Counts other)
        {
            Comparisons += other.Comparisons;
            IncrementalAdvances += other.IncrementalAdvances;
            FullRecomputes += other.FullRecomputes;
            Moves += other.Moves;
            CyclesClosed += other.CyclesClosed;
            OutOfOrder += other.OutOfOrder;
            Rare += other.Rare;
        }

        public override string ToString() =>
            $"{Comparisons} comparisons after operations, {IncrementalAdvances} incremental advances, {FullRecomputes} full recomputes, {Moves} advances that moved, "
            + $"{CyclesClosed} of them committing a cycle, {OutOfOrder} out-of-order reports, {Rare} rare operations";
    }

    private sealed class DifferentialFailedException(string message, Exception inner) : Exception(message, inner);
}
