using System.Globalization;
using System.Text;
using Dse.Darq.Grpc.V1;
using Grpc.Core;

namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// Remote checkpoints with a snapshot function: <see cref="RemoteDarqProcessor.CheckpointAsync(DarqSnapshot, bool, CancellationToken)"/>
/// over the real gRPC server, from the client's table of unconsumed plain SELF messages.
/// </summary>
public sealed class RemoteSnapshotCheckpointTests
{
    /// <summary>The snapshot of a delta-log processor: the sum of its deltas ("n" or "=n") as one message "=sum".</summary>
    internal static IReadOnlyList<ReadOnlyMemory<byte>> Sum(IReadOnlyList<DarqMessage> messages)
    {
        int sum = 0;
        foreach (var message in messages)
        {
            sum += int.Parse(message.Text().TrimStart('='), CultureInfo.InvariantCulture);
        }

        return [Encoding.UTF8.GetBytes($"={sum}")];
    }

    /// <summary>One step per value: consumes a fresh IN message (read from the stream) and adds the value as a SELF delta.</summary>
    internal static async Task<List<long>> StepDeltasAsync(RemoteDarqProducer producer, IAsyncEnumerator<DarqMessage> stream, RemoteDarqProcessor processor,
        params int[] values)
    {
        var deltas = new List<long>();
        foreach (int value in values)
        {
            await producer.EnqueueAsync("in".Bytes());
            var input = Assert.Single(await stream.TakeAsync(1));
            Assert.Equal(DarqMessageKind.In, input.Kind);
            var step = await processor.StepAsync(new DarqStep().Consume(input).AddSelf(value.ToString(CultureInfo.InvariantCulture).Bytes()));
            deltas.Add(step.SelfLsns[0]);
        }

        return deltas;
    }

    [Fact]
    public async Task CheckpointAsync_Snapshot_SeesTheStepsPlainSelfMessagesNotActivitiesAndReplacesThem()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var stream = processor.ReadAllAsync().GetAsyncEnumerator();

        var deltas = await StepDeltasAsync(producer, stream, processor, 1, 2);
        var mixed = await processor.StepAsync(new DarqStep().AddSelf("3".Bytes()).AddActivity("charge", "42".Bytes()).AddOut("elsewhere", "o".Bytes()));
        deltas.Add(mixed.SelfLsns[0]);
        var consumedDelta = await processor.StepAsync(new DarqStep().Consume(deltas[0]).AddSelf("4".Bytes()));
        deltas.RemoveAt(0);
        deltas.Add(consumedDelta.SelfLsns[0]);
        Assert.Equal((3, 3L), (processor.UnconsumedSelfCount, processor.UnconsumedSelfBytes));
        Assert.Equal((darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes), (processor.UnconsumedSelfCount, processor.UnconsumedSelfBytes));

        IReadOnlyList<DarqMessage>? seen = null;
        var checkpoint = await processor.CheckpointAsync(messages =>
        {
            seen = messages;
            return Sum(messages);
        }, waitDurable: true);

        Assert.Equal(deltas, seen!.Select(m => m.Lsn));
        Assert.Equal(["2", "3", "4"], seen!.Select(m => m.Text()));
        Assert.All(seen!, m => Assert.Equal(DarqMessageKind.Self, m.Kind));
        Assert.Equal(deltas, checkpoint.ReplacedLsns);
        Assert.True(darq.CommittedUntilAddress >= checkpoint.DurableAt);
        Assert.Equal((1, 2L), (processor.UnconsumedSelfCount, processor.UnconsumedSelfBytes)); // "=9"
        Assert.Equal((1, 2L), (darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes));

        // The snapshot joins the table: a second checkpoint folds it with later deltas.
        var later = await StepDeltasAsync(producer, stream, processor, 10);
        var second = await processor.CheckpointAsync(Sum);
        Assert.Equal([checkpoint.SelfLsns[0], later[0]], second.ReplacedLsns);

        // An explicit-LSN checkpoint keeps the table too.
        await processor.CheckpointAsync(second.SelfLsns, ["=19".Bytes(), "0".Bytes()]);
        Assert.Equal((2, 4L), (processor.UnconsumedSelfCount, processor.UnconsumedSelfBytes));
        Assert.Equal((darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes), (processor.UnconsumedSelfCount, processor.UnconsumedSelfBytes));
        var third = await processor.CheckpointAsync(Sum);
        Assert.Equal(2, third.ReplacedLsns.Count);

        // The activity is untouched throughout.
        Assert.Equal(2, darq.UnconsumedCount); // "=19" and the activity
    }

    [Fact]
    public async Task CheckpointAsync_Snapshot_AfterReregistration_ReplayRebuildsTheTable()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        long activity;
        using (var first = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders"))
        {
            await using var stream = first.ReadAllAsync().GetAsyncEnumerator();
            await StepDeltasAsync(producer, stream, first, 1, 2, 3);
            await first.CheckpointAsync(Sum);
            await StepDeltasAsync(producer, stream, first, 4);
            activity = (await first.StepAsync(new DarqStep().AddActivity("charge", "42".Bytes()))).SelfLsns[0];
            await StepDeltasAsync(producer, stream, first, 5);
        }

        var pending = await producer.EnqueueAsync("pending".Bytes());
        using var second = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        Assert.Equal((0, 0L), (second.UnconsumedSelfCount, second.UnconsumedSelfBytes));

        // Before the replay's SELF messages are read, a snapshot would miss them: refused, nothing sent.
        bool called = false;
        long tail = darq.TailAddress;
        var early = await Assert.ThrowsAsync<InvalidOperationException>(() => second.CheckpointAsync(m =>
        {
            called = true;
            return Sum(m);
        }));
        Assert.Contains("read the replay's SELF messages", early.Message, StringComparison.Ordinal);
        Assert.False(called);
        Assert.Equal(tail, darq.TailAddress);

        // The replay: "=6", 4, the activity, 5, then the IN message. Reading its SELF part fills the table.
        await using var replay = second.ReadAllAsync().GetAsyncEnumerator();
        var replayed = await replay.TakeAsync(5);
        Assert.Equal(5, second.ReplayCount);
        Assert.Equal(["=6", "4", "5"], replayed.Where(m => m.Kind == DarqMessageKind.Self).Select(m => m.Text()));
        Assert.Equal((activity, pending.Lsn), (replayed[2].Lsn, replayed[4].Lsn));
        Assert.Equal((3, 4L), (second.UnconsumedSelfCount, second.UnconsumedSelfBytes));

        IReadOnlyList<DarqMessage>? seen = null;
        var checkpoint = await second.CheckpointAsync(messages =>
        {
            seen = messages;
            return Sum(messages);
        });
        Assert.Equal(replayed.Where(m => m.Kind == DarqMessageKind.Self).Select(m => m.Lsn), seen!.Select(m => m.Lsn));
        Assert.Equal(3, checkpoint.ReplacedLsns.Count);

        // The next registration replays the snapshot, the activity, then the IN message.
        using var third = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var again = third.ReadAllAsync().GetAsyncEnumerator();
        Assert.Equal([(DarqMessageKind.Activity, activity), (DarqMessageKind.Self, checkpoint.SelfLsns[0]), (DarqMessageKind.In, pending.Lsn)],
            (await again.TakeAsync(3)).Select(m => (m.Kind, m.Lsn)));
        Assert.Equal(1, third.UnconsumedSelfCount);
        var folded = await third.CheckpointAsync(messages =>
        {
            Assert.Equal(["=15"], messages.Select(m => m.Text()));
            return Sum(messages);
        });
        Assert.Equal(checkpoint.SelfLsns, folded.ReplacedLsns);
    }

    [Fact]
    public async Task CheckpointAsync_Snapshot_ReplayOfOnlySelfMessages_CountsAsReadAtItsEnd()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        using (var first = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders"))
        {
            await first.StepAsync(new DarqStep().AddSelf("1".Bytes()).AddSelf("2".Bytes()));
        }

        using var second = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var replay = second.ReadAllAsync().GetAsyncEnumerator();
        await replay.TakeAsync(1);
        await Assert.ThrowsAsync<InvalidOperationException>(() => second.CheckpointAsync(Sum));
        await replay.TakeAsync(1);
        Assert.Equal(2, (await second.CheckpointAsync(Sum)).ReplacedLsns.Count);
    }

    [Fact]
    public async Task CheckpointAsync_Snapshot_RefusedOrFailing_LeavesTheTableAndTheLogUnchanged()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var stream = processor.ReadAllAsync().GetAsyncEnumerator();
        var deltas = await StepDeltasAsync(producer, stream, processor, 1, 2, 3);

        // Another client of the same incarnation consumes a SELF message behind this processor's back.
        var client = new DarqService.DarqServiceClient(server.Channel);
        await client.StepAsync(new StepRequest { Darq = "orders", Incarnation = processor.Incarnation, Consumed = { deltas[1] } });
        long tail = darq.TailAddress;
        var table = (processor.UnconsumedSelfCount, processor.UnconsumedSelfBytes);
        Assert.Equal((3, 3L), table);

        var stale = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.CheckpointAsync(Sum));
        Assert.Equal((deltas[1], DarqStepRejection.AlreadyConsumed), (stale.Lsn, stale.Reason));
        var throwing = await Assert.ThrowsAsync<FormatException>(() => processor.CheckpointAsync(_ => throw new FormatException("bad state")));
        var nullSnapshot = await Assert.ThrowsAsync<InvalidOperationException>(() => processor.CheckpointAsync(_ => null!));
        Assert.Contains("returned null", nullSnapshot.Message, StringComparison.Ordinal);
        var oversized = await Assert.ThrowsAsync<RpcException>(() => processor.CheckpointAsync(_ => [new byte[TestStorage.MaxMessageSize + 1]]));
        Assert.Equal(StatusCode.InvalidArgument, oversized.StatusCode);
        Assert.Contains("MaxMessageSize", oversized.Status.Detail, StringComparison.Ordinal);

        Assert.Equal(table, (processor.UnconsumedSelfCount, processor.UnconsumedSelfBytes));
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal((2, 2L), (darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes));

        // A newer registration: the old processor's checkpoint is refused as stale, its table unchanged.
        using var newer = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        tail = darq.TailAddress;
        await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => processor.CheckpointAsync(Sum));
        Assert.Equal(table, (processor.UnconsumedSelfCount, processor.UnconsumedSelfBytes));
        Assert.Equal(tail, darq.TailAddress);

        // The newer processor, rebuilt from its replay, has the right table and checkpoints.
        await using var replay = newer.ReadAllAsync().GetAsyncEnumerator();
        Assert.Equal([deltas[0], deltas[2]], (await replay.TakeAsync(2)).Select(m => m.Lsn));
        var checkpoint = await newer.CheckpointAsync(Sum);
        Assert.Equal([deltas[0], deltas[2]], checkpoint.ReplacedLsns);
    }

    [Fact]
    public async Task CheckpointAsync_Snapshot_NothingToCompact_SendsNothing()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await processor.StepAsync(new DarqStep().AddActivity("charge", "42".Bytes()));
        long tail = darq.TailAddress;

        var result = await processor.CheckpointAsync(_ => throw new InvalidOperationException("must not be called"));

        Assert.Empty(result.ReplacedLsns);
        Assert.Equal(-1, result.CheckpointLsn);
        Assert.Equal(tail, darq.TailAddress);
        await Assert.ThrowsAsync<ArgumentNullException>(() => processor.CheckpointAsync((DarqSnapshot)null!));
    }
}
