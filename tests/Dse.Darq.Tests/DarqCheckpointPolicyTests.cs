using System.Globalization;
using System.Text;
using Dse.Testing;

namespace Dse.Darq.Tests;

/// <summary>
/// Checkpoint policies (<see cref="DarqCheckpointPolicy"/>: every N steps, by SELF count, by SELF bytes) and the O(1)
/// counters they read (<see cref="Darq.UnconsumedSelfCount"/>, <see cref="Darq.UnconsumedSelfBytes"/>) across steps,
/// checkpoints, recovery and rollback.
/// </summary>
public sealed class DarqCheckpointPolicyTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    /// <summary>The snapshot of a delta-log processor: the sum of its deltas ("n" or "=n") as one message "=sum".</summary>
    private static IReadOnlyList<ReadOnlyMemory<byte>> Sum(IReadOnlyList<DarqMessage> messages)
    {
        int sum = 0;
        foreach (var message in messages)
        {
            sum += int.Parse(message.Text().TrimStart('='), CultureInfo.InvariantCulture);
        }

        return [Encoding.UTF8.GetBytes($"={sum}")];
    }

    /// <summary>One step per value: consumes a fresh IN message and adds the value as a SELF delta.</summary>
    private static async Task<List<long>> StepDeltasAsync(Darq darq, DarqProcessor processor, params int[] values)
    {
        var deltas = new List<long>();
        foreach (int value in values)
        {
            var sent = await darq.EnqueueAsync("in".Bytes());
            var result = await processor.StepAsync(new DarqStep().Consume(sent.Lsn).AddSelf(value.ToString(CultureInfo.InvariantCulture).Bytes()));
            deltas.Add(result.SelfLsns[0]);
        }

        return deltas;
    }

    private static (int Count, long Bytes) Counters(Darq darq) => (darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes);

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task UnconsumedSelfCounters_AcrossStepsCheckpointAndReopen_CountOnlyPlainSelfMessages()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            Assert.Equal((0, 0L), Counters(darq));
            var processor = await darq.RegisterProcessorAsync();

            // IN messages, OUT messages and activities are not counted; SELF payload bytes are.
            await darq.EnqueueAsync("an IN message".Bytes());
            var first = await processor.StepAsync(new DarqStep().AddSelf("abc".Bytes()).AddSelf("12345".Bytes())
                .AddActivity("charge", "x".Bytes()).AddOut("elsewhere", "out".Bytes()));
            Assert.Equal((2, 8L), Counters(darq));

            // Consuming a SELF message uncounts it; consuming the activity changes nothing.
            await processor.StepAsync(new DarqStep().Consume(first.SelfLsns[0]).Consume(first.SelfLsns[2]).AddSelf("1".Bytes()));
            Assert.Equal((2, 6L), Counters(darq));

            // A checkpoint swaps the replaced messages for the snapshot.
            var checkpoint = await processor.CheckpointAsync(_ => ["snapshot-bytes".Bytes(), "2".Bytes()]);
            Assert.Equal(2, checkpoint.ReplacedLsns.Count);
            Assert.Equal((2, 15L), Counters(darq));

            // An explicit-LSN checkpoint too, and a truncation (which keeps every unconsumed message) changes nothing.
            await processor.CheckpointAsync([checkpoint.SelfLsns[1]], []);
            Assert.Equal((1, 14L), Counters(darq));
            await darq.TruncateAsync();
            Assert.Equal((1, 14L), Counters(darq));

            // Batches count like their steps.
            await processor.StepBatchAsync([new DarqStep().AddSelf("aa".Bytes()), new DarqStep().AddSelf("bbb".Bytes()).Consume(checkpoint.SelfLsns[0])]);
            Assert.Equal((2, 5L), Counters(darq));
            await darq.CommitAsync();
        }

        // Recovery rebuilds them from the log.
        await using var reopened = await storage.OpenAsync();
        Assert.Equal((2, 5L), Counters(reopened));
        Assert.Equal(3, reopened.UnconsumedCount); // the IN message too
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task UnconsumedSelfCounters_AfterCrashBeforeTheCheckpointCommits_CountTheOldMessages()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            var processor = await darq.RegisterProcessorAsync();
            await StepDeltasAsync(darq, processor, 10, 20, 300);
            await darq.CommitAsync();
            await processor.CheckpointAsync(Sum);
            Assert.Equal((1, 4L), Counters(darq)); // "=330"
            storage.CrashNow();
        }

        await using var reopened = await storage.OpenAsync();
        Assert.Equal((3, 7L), Counters(reopened));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task UnconsumedSelfCounters_AfterGeneralSpeculationRollback_MatchTheRestoredVersion()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator));

        // Version 1 of B: two SELF messages (4 bytes), committed by the coordinator.
        var processor = await b.RegisterProcessorAsync(guard.Token);
        var kept = await processor.StepAsync(new DarqStep().AddSelf("ab".Bytes()).AddSelf("cd".Bytes()), guard.Token);
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.DseStateObject.WaitForCommitAsync(1, 0, guard.Token);
        Assert.Equal((2, 4L), Counters(b));

        await using (var a = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator)))
        {
            // B's next version depends on A's version that never persists; in it B consumes, adds and checkpoints SELF messages.
            await a.EnqueueAsync("x".Bytes(), guard.Token);
            await a.DseStateObject!.StartLocalActionAsync(guard.Token);
            var fromA = a.DseStateObject.EndAction();
            await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "from-a".Bytes()) { DseHeader = fromA.ToArray() }, guard.Token);
            await processor.StepAsync(new DarqStep().Consume(kept.SelfLsns[0]).AddSelf("lost-delta".Bytes()), guard.Token);
            await processor.CheckpointAsync(_ => ["lost-snapshot".Bytes(), "more".Bytes(), "and more".Bytes()], guard.Token);
            Assert.Equal((3, 25L), Counters(b));
            await b.DseStateObject.AdvanceVersionAsync(guard.Token);
            aStorage.CrashNow();
        }

        // A restarts without its tail: B rolls back to version 1, and the counters with it.
        await using var a2 = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator));
        await b.DseStateObject.RefreshAsync(guard.Token);
        Assert.Equal(1, b.DseStateObject.WorldLine);
        Assert.Equal((2, 4L), Counters(b));
        var replay = (await b.RegisterProcessorAsync(guard.Token)).Drain();
        Assert.Equal(["ab", "cd"], replay.Select(m => m.Text()));
    }

    [Fact]
    public async Task EnableAutoCheckpoint_PolicyEverySteps_CheckpointsOnTheNthStepLikeTheIntOverload()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { EverySteps = 3 }, Sum);

        await StepDeltasAsync(darq, processor, 1, 2);
        Assert.Null(processor.LastAutoCheckpoint);
        Assert.Equal(2, darq.UnconsumedSelfCount);

        // A batch of two steps reaches the third and fourth step: the checkpoint runs after it.
        var batch = await processor.StepBatchAsync([new DarqStep().AddSelf("3".Bytes()), new DarqStep().AddSelf("4".Bytes())]);
        Assert.Equal(4, processor.LastAutoCheckpoint!.ReplacedLsns.Count);
        Assert.Equal(batch[1].SelfLsns[0], processor.LastAutoCheckpoint.ReplacedLsns[^1]);
        Assert.Equal((1, 3L), Counters(darq)); // "=10"
    }

    [Fact]
    public async Task EnableAutoCheckpoint_PolicyEverySteps_ConsumeOnlyStepsCountLikeSteps()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { EverySteps = 3 }, Sum);

        await StepDeltasAsync(darq, processor, 1, 2);
        var sent = await darq.EnqueueAsync("in".Bytes());
        Assert.Null(processor.LastAutoCheckpoint);

        // The third step consumes only: it counts, and the checkpoint runs after it as after any step.
        var consumed = await processor.ConsumeAsync(sent.Lsn);
        Assert.Equal(2, processor.LastAutoCheckpoint!.ReplacedLsns.Count);
        Assert.Equal(consumed.DurableAt, processor.LastAutoCheckpoint.SelfLsns[0]); // the checkpoint's batch follows the step
        Assert.Equal((1, 2L), Counters(darq)); // "=3"
    }

    [Fact]
    public async Task EnableAutoCheckpoint_MaxSelfMessages_CheckpointsOnTheStepThatReachesIt()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { MaxSelfMessages = 4 }, Sum);

        // Steps that add no SELF message never trigger it, however many.
        for (int i = 0; i < 10; i++)
        {
            var sent = await darq.EnqueueAsync("in".Bytes());
            await processor.StepAsync(new DarqStep().Consume(sent.Lsn));
        }

        var deltas = await StepDeltasAsync(darq, processor, 1, 2, 3);
        Assert.Null(processor.LastAutoCheckpoint);
        Assert.Equal(3, darq.UnconsumedSelfCount);

        // The fourth SELF message reaches the threshold: the snapshot replaces all four.
        deltas.AddRange(await StepDeltasAsync(darq, processor, 4));
        Assert.Equal(deltas, processor.LastAutoCheckpoint!.ReplacedLsns);
        Assert.Equal((1, 3L), Counters(darq));

        // The snapshot counts toward the next one: three more deltas reach four messages again.
        var first = processor.LastAutoCheckpoint;
        await StepDeltasAsync(darq, processor, 5, 6);
        Assert.Same(first, processor.LastAutoCheckpoint);
        await StepDeltasAsync(darq, processor, 7);
        Assert.NotSame(first, processor.LastAutoCheckpoint);
        Assert.Equal(first.SelfLsns[0], processor.LastAutoCheckpoint!.ReplacedLsns[0]);
        Assert.Equal((1, 3L), Counters(darq)); // "=28"
    }

    [Fact]
    public async Task EnableAutoCheckpoint_MaxSelfBytes_CheckpointsOnTheStepThatReachesIt()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { MaxSelfBytes = 10 }, Sum);

        // Activities do not count toward the bytes.
        await processor.StepAsync(new DarqStep().AddActivity("charge", new byte[100]));
        await StepDeltasAsync(darq, processor, 1000, 2000); // 8 bytes
        Assert.Null(processor.LastAutoCheckpoint);
        Assert.Equal((2, 8L), Counters(darq));

        await StepDeltasAsync(darq, processor, 30); // 10 bytes
        Assert.Equal(3, processor.LastAutoCheckpoint!.ReplacedLsns.Count);
        Assert.Equal((1, 5L), Counters(darq)); // "=3030"
        Assert.Equal(2, darq.UnconsumedCount); // the snapshot and the activity
    }

    [Fact]
    public async Task EnableAutoCheckpoint_AnyThresholdOfSeveral_Triggers()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { EverySteps = 100, MaxSelfMessages = 100, MaxSelfBytes = 6 }, Sum);

        await StepDeltasAsync(darq, processor, 12, 34);
        Assert.Null(processor.LastAutoCheckpoint);
        await StepDeltasAsync(darq, processor, 56);
        Assert.Equal(3, processor.LastAutoCheckpoint!.ReplacedLsns.Count);
    }

    [Fact]
    public async Task EnableAutoCheckpoint_SnapshotThrows_LoggedRetriedOnALaterStepAndChangesNothing()
    {
        var events = new LogCapture();
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(loggerFactory: events);
        var processor = await darq.RegisterProcessorAsync();
        int calls = 0;
        bool broken = true;
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { MaxSelfMessages = 2 }, messages =>
        {
            calls++;
            return broken ? throw new FormatException("bad state") : Sum(messages);
        });

        var deltas = await StepDeltasAsync(darq, processor, 1, 2);
        long tail = darq.TailAddress;
        Assert.Equal(1, calls);
        Assert.Null(processor.LastAutoCheckpoint);
        Assert.Equal((2, 2L), Counters(darq));
        Assert.Contains(events.Entries, e => e.EventId.Id == 4220);
        var failure = Assert.Single(events.Entries, e => e.EventId.Id == 4203);
        Assert.IsType<FormatException>(failure.Exception);
        Assert.Same(failure.Exception, processor.LastAutoCheckpointError);

        // The step still succeeds; the threshold stays reached, so the next step tries again (and fails again).
        deltas.AddRange(await StepDeltasAsync(darq, processor, 3));
        Assert.Equal(2, calls);
        Assert.Equal((3, 3L), Counters(darq));
        Assert.Equal(2, events.Count(4203));
        Assert.True(darq.TailAddress > tail);

        // Once the snapshot works, the next step compacts everything.
        broken = false;
        deltas.AddRange(await StepDeltasAsync(darq, processor, 4));
        Assert.Equal(deltas, processor.LastAutoCheckpoint!.ReplacedLsns);
        Assert.Null(processor.LastAutoCheckpointError);
        Assert.Equal((1, 3L), Counters(darq));
        await darq.CommitAsync();
        await using var reopened = await storage.Snapshot().OpenAsync();
        Assert.Equal(["=10"], (await reopened.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task EnableAutoCheckpoint_EveryStepsSnapshotThrows_RetriedAfterTheNextNSteps()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        int calls = 0;
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { EverySteps = 2 }, messages =>
        {
            calls++;
            return calls == 1 ? throw new FormatException("bad state") : Sum(messages);
        });

        await StepDeltasAsync(darq, processor, 1, 2);
        Assert.Equal((1, (2, 2L)), (calls, Counters(darq)));
        await StepDeltasAsync(darq, processor, 3);
        Assert.Equal(1, calls);
        await StepDeltasAsync(darq, processor, 4);
        Assert.Equal(2, calls);
        Assert.Equal(4, processor.LastAutoCheckpoint!.ReplacedLsns.Count);
    }

    [Fact]
    public async Task EnableAutoCheckpoint_BadPolicy_ThrowsNamingTheThresholdAndKeepsThePreviousPolicy()
    {
        await using var darq = await new DarqTestStorage().OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { MaxSelfMessages = 2 }, Sum);

        var none = Assert.Throws<ArgumentException>(() => processor.EnableAutoCheckpoint(new DarqCheckpointPolicy(), Sum));
        Assert.Contains("at least one threshold", none.Message, StringComparison.Ordinal);
        var cases = new (DarqCheckpointPolicy Policy, string Name)[]
        {
            (new DarqCheckpointPolicy { EverySteps = 0 }, "EverySteps is 0"),
            (new DarqCheckpointPolicy { MaxSelfMessages = -1, EverySteps = 5 }, "MaxSelfMessages is -1"),
            (new DarqCheckpointPolicy { MaxSelfBytes = 0, MaxSelfMessages = 5 }, "MaxSelfBytes is 0"),
        };
        foreach (var (policy, name) in cases)
        {
            var bad = Assert.Throws<ArgumentException>(() => processor.EnableAutoCheckpoint(policy, Sum));
            Assert.Contains(name, bad.Message, StringComparison.Ordinal);
            Assert.Equal("policy", bad.ParamName);
        }

        Assert.Throws<ArgumentNullException>(() => processor.EnableAutoCheckpoint(null!, Sum));
        Assert.Throws<ArgumentNullException>(() => processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { EverySteps = 1 }, null!));
        Assert.Throws<ArgumentOutOfRangeException>(() => processor.EnableAutoCheckpoint(0, Sum));

        // Nothing changed: the first policy still runs (two SELF messages), none of the refused ones (every step).
        await StepDeltasAsync(darq, processor, 1);
        Assert.Null(processor.LastAutoCheckpoint);
        await StepDeltasAsync(darq, processor, 2);
        Assert.Equal(2, processor.LastAutoCheckpoint!.ReplacedLsns.Count);
    }
}
