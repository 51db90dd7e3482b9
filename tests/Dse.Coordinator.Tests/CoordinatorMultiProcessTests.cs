using System.Diagnostics;
using System.Globalization;
using Dse.Coordinator.Tests.Infrastructure;
using Xunit.Abstractions;

namespace Dse.Coordinator.Tests;

/// <summary>
/// Crash tests of the coordinator across OS processes, with kill -9. A coordinator host (<c>Dse.Coordinator.Host</c>,
/// file log) and three participant processes (<c>tests/Dse.Coordinator.Participant</c>: a
/// <see cref="SnapshotStateObject"/> whose state is the list of events it applied, on a local file, talking to the host
/// over gRPC) run on loopback. Each participant generates an event in a local action every 10 ms and sends it to a
/// random peer with the action's DSE header; the test routes the messages (dropping those addressed to a participant
/// that is down) and the receiver records <c>recv:event</c> if its runtime accepts the header. Now and then a
/// participant detaches an sthread, passes a barrier and prints what the sthread observed: what an outside observer
/// saw. In each of two rounds the test kills the coordinator with SIGKILL while the participants keep running (and
/// keep sending), restarts it on the same port and log, then kills one participant with SIGKILL and restarts it on the
/// same storage. After every restart it waits for every participant's committed version to move past where it stood
/// (after a participant restart: past the decision), then for a failure-free stretch in which everyone commits, sends
/// and exposes again. Finally it quiesces the cluster and checks the safety property (docs/libdse.md) on the surviving
/// states: every <c>recv:e</c> has <c>e</c> in its sender's state (nothing depends on lost state), and every event any
/// incarnation exposed through a barrier is in its owner's state (nothing that passed a barrier is undone). It also
/// checks that the coordinator's log keeps its length over every failure-free stretch and grows with each participant
/// restart's rollback decision. Waits are on what the processes print, with a 60 s guard against hangs; nothing is
/// timed. A failed run keeps its directory (coordinator log, participants' storage, every process's standard output
/// and error) and names it; <c>DSE_MP_KEEP=1</c> keeps it after a pass too. The seed fixes the participants' random
/// choices and the victims, not the timing; it is printed, and <c>DSE_MP_SEED</c> reuses one. Run it alone with
/// <c>dotnet test tests/Dse.Coordinator.Tests -c Release --filter Category=MultiProcess</c>.
/// </summary>
[Trait("Category", "MultiProcess")]
public sealed class CoordinatorMultiProcessTests(ITestOutputHelper output)
{
    /// <summary>Crash rounds: each kills the coordinator, then a participant (a different one each round when possible).</summary>
    private const int Rounds = 2;

    /// <summary>How far every participant's committed version must move for a stretch to count.</summary>
    private const int StretchVersions = 25;

    /// <summary>How many events every participant must send for a stretch to count.</summary>
    private const int StretchEvents = 30;

    [Fact]
    public async Task KillCoordinatorAndParticipants_WhileRunning_BoundaryAdvancesAndNothingDependsOnLostState()
    {
        int seed = Seed();
        output.WriteLine($"seed {seed} (DSE_MP_SEED={seed} reuses the participants' random choices; timing is not replayed)");
        var clock = Stopwatch.StartNew();
        var cluster = CrashTestCluster.Create(seed, 1, 2, 3);
        long[] ids = [.. cluster.Ids];
        var victims = new List<long>();
        long[] victimOrder = [.. ids];
        new Random(seed).Shuffle(victimOrder);
        bool passed = false;
        try
        {
            await cluster.StartCoordinatorAsync();
            await Task.WhenAll(ids.Select(cluster.StartParticipantAsync));
            await cluster.WaitForCommitsAboveAsync(ids.ToDictionary(id => id, _ => 0L), "warm-up");
            await RunFailureFreeStretchAsync(cluster, "before any failure");

            for (int round = 1; round <= Rounds; round++)
            {
                // kill -9 the coordinator. The participants keep running speculatively: they keep acting and sending.
                var sentBeforeKill = ids.ToDictionary(id => id, cluster.Sent);
                await cluster.KillCoordinatorAsync();
                await cluster.WaitUntilAsync(
                    () => ids.All(id => cluster.Sent(id) >= sentBeforeKill[id] + StretchEvents),
                    $"every participant to keep sending while the coordinator is down (round {round})");
                var beforeCoordinatorRestart = cluster.CommittedVersions();
                await cluster.StartCoordinatorAsync();
                await cluster.WaitForCommitsAboveAsync(beforeCoordinatorRestart, $"after coordinator restart {round}");
                await RunFailureFreeStretchAsync(cluster, $"after coordinator restart {round}");

                // kill -9 a participant and restart it on its storage: a rollback decision, which must be durable.
                long victim = victimOrder[(round - 1) % victimOrder.Length];
                victims.Add(victim);
                var beforeParticipantKill = cluster.CommittedVersions();
                long logBeforeParticipantKill = LogLength(cluster);
                await cluster.KillParticipantAsync(victim);
                long worldLine = await cluster.StartParticipantAsync(victim);
                Assert.True(LogLength(cluster) > logBeforeParticipantKill, $"The coordinator log did not grow with participant {victim}'s restart, whose rollback decision must be durable.");

                // Everyone applies the decision, then commits what it did after it (its acknowledgement, if any, went first).
                await cluster.WaitForWorldLineAsync(worldLine, $"after participant {victim}'s restart in round {round}");
                var afterDecision = cluster.CurrentVersions();
                await cluster.WaitForCommitsAboveAsync(
                    ids.ToDictionary(id => id, id => Math.Max(afterDecision[id], beforeParticipantKill[id])),
                    $"after participant {victim}'s restart in round {round}");
                await RunFailureFreeStretchAsync(cluster, $"after participant {victim}'s restart in round {round}");
            }

            await cluster.QuiesceAsync();
            var final = ids.ToDictionary(id => id, cluster.FinalState);
            var states = ids.ToDictionary(id => id, id => new HashSet<string>(final[id].Events, StringComparer.Ordinal));

            // Safety: nothing surviving depends on lost state.
            var orphans = ids
                .SelectMany(id => final[id].Events.Where(e => e.StartsWith("recv:", StringComparison.Ordinal)).Select(e => (Receiver: id, Event: e[5..])))
                .Where(r => !states[SenderOf(r.Event)].Contains(r.Event))
                .Select(r => $"participant {r.Receiver} holds recv:{r.Event}, but {r.Event} is not in participant {SenderOf(r.Event)}'s state")
                .ToList();
            Assert.True(orphans.Count == 0, $"Surviving state depends on lost state (seed {seed}):\n{string.Join('\n', orphans.Take(10))}");

            // Safety: nothing that passed a barrier is undone, across restarts too.
            var undone = ids
                .SelectMany(id => cluster.Exposed(id).Where(e => !states[id].Contains(e)).Select(e => $"participant {id} exposed {e}, which is not in its state"))
                .ToList();
            Assert.True(undone.Count == 0, $"Exposed state was undone (seed {seed}):\n{string.Join('\n', undone.Take(10))}");

            foreach (long id in ids)
            {
                Assert.True(states[id].Count == final[id].Events.Count, $"Participant {id}'s state holds an event twice (seed {seed}).");
            }

            // The run exercised what it claims to.
            var counters = cluster.Counters();
            int received = final.Values.Sum(f => f.Events.Count(e => e.StartsWith("recv:", StringComparison.Ordinal)));
            Assert.True(received > 0, "No message was received.");
            Assert.True(ids.All(id => cluster.Exposes(id) > 0), "A participant exposed nothing through a barrier.");
            Assert.Equal(Rounds + 1, counters.CoordinatorStarts);
            Assert.Equal(ids.Length + Rounds, counters.ParticipantStarts);

            int lost = victims.Distinct().Sum(v => cluster.SentEvents(v).Count(e => !states[v].Contains(e)));
            output.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"RESULT seed {seed}: {Rounds} rounds killing the coordinator, then participants {string.Join(", ", victims)}; " +
                $"sent {counters.Sent}, routed {counters.Routed}, dropped {counters.Dropped}, discarded {counters.Discarded}, " +
                $"received in final states {received}, exposes {counters.Exposes} (withheld {counters.Withheld}), " +
                $"sent events lost with the victims {lost}, final committed {Format(final, f => f.Committed)}, " +
                $"world-lines {Format(final, f => f.WorldLine)}, coordinator log {LogLength(cluster)} bytes, {clock.Elapsed.TotalSeconds:0.0} s"));
            passed = true;
        }
        catch (Exception)
        {
            output.WriteLine($"FAILED after {clock.Elapsed.TotalSeconds:0.0} s, seed {seed}\n{cluster.Describe()}");
            throw;
        }
        finally
        {
            await cluster.DisposeAsync(keepDirectory: !passed || Environment.GetEnvironmentVariable("DSE_MP_KEEP") == "1");
        }
    }

    /// <summary>
    /// A failure-free stretch: every participant's committed version moves by <see cref="StretchVersions"/>, and every
    /// participant sends <see cref="StretchEvents"/> events and passes a barrier, while the coordinator's log keeps its length.
    /// </summary>
    private static async Task RunFailureFreeStretchAsync(CrashTestCluster cluster, string phase)
    {
        long before = LogLength(cluster);
        var committed = cluster.CommittedVersions();
        var sent = cluster.Ids.ToDictionary(id => id, cluster.Sent);
        var exposes = cluster.Ids.ToDictionary(id => id, cluster.Exposes);
        await cluster.WaitUntilAsync(
            () => cluster.Ids.All(id => cluster.Committed(id) >= committed[id] + StretchVersions && cluster.Sent(id) >= sent[id] + StretchEvents && cluster.Exposes(id) > exposes[id]),
            $"a failure-free stretch {phase}: every participant commits {StretchVersions} versions past {Format(committed, v => v)}, sends {StretchEvents} events and exposes once");
        long after = LogLength(cluster);
        Assert.True(before == after, $"The coordinator log grew from {before} to {after} bytes over a failure-free stretch {phase}.");
    }

    private static long LogLength(CrashTestCluster cluster) => new FileInfo(cluster.CoordinatorLogPath).Length;

    /// <summary>The participant that generated <paramref name="eventName"/>: <c>p{id}-{incarnation}.{n}</c>.</summary>
    private static long SenderOf(string eventName) =>
        long.Parse(eventName.AsSpan(1, eventName.IndexOf('-', StringComparison.Ordinal) - 1), CultureInfo.InvariantCulture);

    private static string Format<T>(IReadOnlyDictionary<long, T> values, Func<T, long> select) =>
        string.Join(", ", values.OrderBy(v => v.Key).Select(v => string.Create(CultureInfo.InvariantCulture, $"{v.Key}:{select(v.Value)}")));

    private static int Seed() =>
        int.TryParse(Environment.GetEnvironmentVariable("DSE_MP_SEED"), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out int seed)
            ? seed
            : Random.Shared.Next();
}
