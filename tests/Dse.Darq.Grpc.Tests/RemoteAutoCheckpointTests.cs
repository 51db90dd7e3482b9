using Dse.Darq.Grpc.V1;
using Dse.Testing;
using Microsoft.Extensions.Logging;
using static Dse.Darq.Grpc.Tests.RemoteSnapshotCheckpointTests;

namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// Automatic checkpoints of a remote processor (<see cref="RemoteDarqProcessor.EnableAutoCheckpoint(DarqCheckpointPolicy, DarqSnapshot, ILogger?)"/>)
/// over the real gRPC server: taken by the client after its own steps, from its table of unconsumed plain SELF messages.
/// </summary>
public sealed class RemoteAutoCheckpointTests
{
    [Fact]
    public async Task EnableAutoCheckpoint_EverySteps_CompactsOnTheNthStepAndTheNextReplayHoldsTheSnapshot()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var stream = processor.ReadAllAsync().GetAsyncEnumerator();
        processor.EnableAutoCheckpoint(3, Sum);

        var deltas = await StepDeltasAsync(producer, stream, processor, 1, 2);
        Assert.Null(processor.LastAutoCheckpoint);
        Assert.Equal(2, darq.UnconsumedSelfCount);

        deltas.AddRange(await StepDeltasAsync(producer, stream, processor, 3));
        var checkpoint = processor.LastAutoCheckpoint;
        Assert.NotNull(checkpoint);
        Assert.Equal(deltas, checkpoint.ReplacedLsns);
        Assert.Equal((1, 2L), (processor.UnconsumedSelfCount, processor.UnconsumedSelfBytes)); // "=6"
        Assert.Equal((1, 2L), (darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes));
        Assert.Null(processor.LastAutoCheckpointError);

        // Two more steps: not yet the third since the checkpoint.
        var later = await StepDeltasAsync(producer, stream, processor, 4, 5);
        Assert.Same(checkpoint, processor.LastAutoCheckpoint);

        // What a new registration replays is the snapshot, then the later deltas.
        using var next = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var replay = next.ReadAllAsync().GetAsyncEnumerator();
        var replayed = await replay.TakeAsync(3);
        Assert.Equal([checkpoint.SelfLsns[0], .. later], replayed.Select(m => m.Lsn));
        Assert.Equal(["=6", "4", "5"], replayed.Select(m => m.Text()));
    }

    [Fact]
    public async Task EnableAutoCheckpoint_MaxSelfMessagesOrBytes_CheckpointsOnTheStepThatReachesIt()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var stream = processor.ReadAllAsync().GetAsyncEnumerator();
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { MaxSelfMessages = 3 }, Sum);

        var deltas = await StepDeltasAsync(producer, stream, processor, 1, 2);
        Assert.Null(processor.LastAutoCheckpoint);
        deltas.AddRange(await StepDeltasAsync(producer, stream, processor, 3));
        var first = processor.LastAutoCheckpoint!;
        Assert.Equal(deltas, first.ReplacedLsns);

        // The snapshot counts: it and two more deltas make three again.
        var more = await StepDeltasAsync(producer, stream, processor, 4);
        Assert.Same(first, processor.LastAutoCheckpoint);
        more.AddRange(await StepDeltasAsync(producer, stream, processor, 5));
        var second = processor.LastAutoCheckpoint!;
        Assert.Equal([first.SelfLsns[0], .. more], second.ReplacedLsns);
        Assert.Equal(1, darq.UnconsumedSelfCount);

        // By bytes: "=15" (3 bytes) and a 10-byte delta reach 12.
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { MaxSelfBytes = 12 }, Sum);
        await processor.StepAsync(new DarqStep().AddSelf("1".Bytes()));
        Assert.Same(second, processor.LastAutoCheckpoint);
        await processor.StepAsync(new DarqStep().AddSelf("0000000010".Bytes()));
        var third = processor.LastAutoCheckpoint!;
        Assert.NotSame(second, third);
        Assert.Equal(3, third.ReplacedLsns.Count);
        Assert.Equal((1, 3L), (darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes)); // "=26"
    }

    [Fact]
    public async Task EnableAutoCheckpoint_SnapshotThrows_LoggedKeptRetriedOnALaterStepAndChangesNothing()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var stream = processor.ReadAllAsync().GetAsyncEnumerator();
        using var logs = new LogCapture();
        bool fail = true;
        processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { MaxSelfMessages = 2 }, messages =>
            fail ? throw new FormatException("bad state") : Sum(messages), logs.CreateLogger("test"));

        var deltas = await StepDeltasAsync(producer, stream, processor, 1);
        long tail = darq.TailAddress;
        // The step that reaches the threshold succeeds; its checkpoint fails and changes nothing.
        var step = await processor.StepAsync(new DarqStep().AddSelf("2".Bytes()));
        deltas.Add(step.SelfLsns[0]);
        Assert.True(darq.TailAddress > tail);
        Assert.IsType<FormatException>(processor.LastAutoCheckpointError);
        Assert.Null(processor.LastAutoCheckpoint);
        Assert.Equal((2, 2L), (darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes));
        Assert.Equal((2, 2L), (processor.UnconsumedSelfCount, processor.UnconsumedSelfBytes));
        string logged = (await logs.WaitForAsync(4120, "automatic checkpoint failed").WaitAsync(TestText.Timeout)).Message;
        Assert.Contains($"incarnation {processor.Incarnation} of DARQ 'orders'", logged, StringComparison.Ordinal);
        Assert.Contains("MaxSelfMessages reached", (await logs.WaitForAsync(4121, "due").WaitAsync(TestText.Timeout)).Message, StringComparison.Ordinal);

        // The threshold stays reached: the next step tries again, and this time it compacts.
        fail = false;
        deltas.Add((await processor.StepAsync(new DarqStep().AddSelf("3".Bytes()))).SelfLsns[0]);
        Assert.Equal(deltas, processor.LastAutoCheckpoint!.ReplacedLsns);
        Assert.Null(processor.LastAutoCheckpointError);
        Assert.Equal((1, 2L), (darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes)); // "=6"
    }

    [Fact]
    public async Task EnableAutoCheckpoint_RefusedByTheDarq_KeptAsTheErrorAndTheStepStillSucceeds()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        var first = await processor.StepAsync(new DarqStep().AddSelf("1".Bytes()));

        // Another client of the same incarnation consumes that SELF message behind this processor's back: its table is stale.
        var client = new DarqService.DarqServiceClient(server.Channel);
        await client.StepAsync(new StepRequest { Darq = "orders", Incarnation = processor.Incarnation, Consumed = { first.SelfLsns[0] } });
        processor.EnableAutoCheckpoint(1, Sum);

        var step = await processor.StepAsync(new DarqStep().AddSelf("2".Bytes()));

        var refused = Assert.IsType<DarqStepRejectedException>(processor.LastAutoCheckpointError);
        Assert.Equal((first.SelfLsns[0], DarqStepRejection.AlreadyConsumed), (refused.Lsn, refused.Reason));
        Assert.Null(processor.LastAutoCheckpoint);
        Assert.Equal((1, 1L), (darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes)); // "2" only

        // Registering again rebuilds the table from the replay, and the new processor's checkpoints work.
        using var again = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var replay = again.ReadAllAsync().GetAsyncEnumerator();
        await replay.TakeAsync(1);
        again.EnableAutoCheckpoint(1, Sum);
        await again.StepAsync(new DarqStep().AddSelf("3".Bytes()));
        Assert.Equal(2, again.LastAutoCheckpoint!.ReplacedLsns.Count);
        Assert.Null(again.LastAutoCheckpointError);
    }

    [Fact]
    public async Task EnableAutoCheckpoint_BeforeTheReplaysSelfMessagesAreRead_WaitsThenCheckpointsAll()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        using (var first = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders"))
        {
            await first.StepAsync(new DarqStep().AddSelf("1".Bytes()).AddSelf("2".Bytes()));
        }

        using var second = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        using var logs = new LogCapture();
        second.EnableAutoCheckpoint(1, Sum, logs.CreateLogger("test"));

        // Due, but the table does not hold the replayed "1" and "2" yet: nothing is sent.
        await second.StepAsync(new DarqStep().AddSelf("3".Bytes()));
        Assert.Null(second.LastAutoCheckpoint);
        Assert.Null(second.LastAutoCheckpointError);
        Assert.Equal(3, darq.UnconsumedSelfCount);
        Assert.Contains("waits until the replay's SELF messages are read", (await logs.WaitForAsync(4122, "EverySteps").WaitAsync(TestText.Timeout)).Message,
            StringComparison.Ordinal);

        await using var replay = second.ReadAllAsync().GetAsyncEnumerator();
        await replay.TakeAsync(2);
        await second.StepAsync(new DarqStep().AddSelf("4".Bytes()));
        Assert.Equal(4, second.LastAutoCheckpoint!.ReplacedLsns.Count);
        Assert.Equal((1, 3L), (darq.UnconsumedSelfCount, darq.UnconsumedSelfBytes)); // "=10"
    }

    [Fact]
    public async Task EnableAutoCheckpoint_BadPolicyKeepsThePreviousOne_AndDisableStopsIt()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        processor.EnableAutoCheckpoint(2, Sum);

        var none = Assert.Throws<ArgumentException>(() => processor.EnableAutoCheckpoint(new DarqCheckpointPolicy(), Sum));
        Assert.Contains("at least one threshold", none.Message, StringComparison.Ordinal);
        var zero = Assert.Throws<ArgumentException>(() => processor.EnableAutoCheckpoint(new DarqCheckpointPolicy { MaxSelfBytes = 0 }, Sum));
        Assert.Contains("MaxSelfBytes is 0", zero.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentOutOfRangeException>(() => processor.EnableAutoCheckpoint(0, Sum));
        Assert.Throws<ArgumentNullException>(() => processor.EnableAutoCheckpoint(2, null!));

        await processor.StepAsync(new DarqStep().AddSelf("1".Bytes()));
        await processor.StepAsync(new DarqStep().AddSelf("2".Bytes()));
        var checkpoint = processor.LastAutoCheckpoint;
        Assert.NotNull(checkpoint);
        Assert.Equal(2, checkpoint.ReplacedLsns.Count);

        processor.DisableAutoCheckpoint();
        await processor.StepAsync(new DarqStep().AddSelf("3".Bytes()));
        await processor.StepAsync(new DarqStep().AddSelf("4".Bytes()));
        Assert.Same(checkpoint, processor.LastAutoCheckpoint);
        Assert.Equal(3, darq.UnconsumedSelfCount);
    }
}
