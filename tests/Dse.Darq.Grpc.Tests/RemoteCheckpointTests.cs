using Dse.Darq.Grpc.V1;
using Grpc.Core;

namespace Dse.Darq.Grpc.Tests;

/// <summary>Checkpoints of a remote processor: <see cref="RemoteDarqProcessor.CheckpointAsync"/> over <c>DarqService.Checkpoint</c>.</summary>
public sealed class RemoteCheckpointTests
{
    [Fact]
    public async Task CheckpointAsync_ReplacesSelfMessages_ReplayAfterReregistrationHoldsOnlyTheSnapshot()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        var order = await producer.EnqueueAsync("order".Bytes());
        var later = await producer.EnqueueAsync("later".Bytes());

        DarqCheckpointResult checkpoint;
        using (var first = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders"))
        {
            var step = await first.StepAsync(new DarqStep().Consume(order.Lsn).AddSelf("state-1".Bytes()).AddSelf("state-2".Bytes()));
            checkpoint = await first.CheckpointAsync(step.SelfLsns, ["snapshot".Bytes()], waitDurable: true);

            Assert.Equal(step.SelfLsns, checkpoint.ReplacedLsns);
            Assert.True(checkpoint.CheckpointLsn > Assert.Single(checkpoint.SelfLsns));
            Assert.True(darq.CommittedUntilAddress >= checkpoint.DurableAt);
        }

        using var second = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var replay = second.ReadAllAsync().GetAsyncEnumerator();
        var replayed = await replay.TakeAsync(2);

        Assert.Equal(2, second.ReplayCount);
        Assert.Equal([(checkpoint.SelfLsns[0], DarqMessageKind.Self, "snapshot"), (later.Lsn, DarqMessageKind.In, "later")],
            replayed.Select(m => (m.Lsn, m.Kind, m.Text())));
    }

    [Fact]
    public async Task CheckpointAsync_BadReplacements_AreRefusedWithTheReasonAndChangeNothing()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        var consumed = await producer.EnqueueAsync("consumed".Bytes());
        var waiting = await producer.EnqueueAsync("waiting".Bytes());
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        var step = await processor.StepAsync(new DarqStep().Consume(consumed.Lsn).AddSelf("state".Bytes()).AddActivity("charge", "42".Bytes()));
        long self = step.SelfLsns[0];
        long activity = step.SelfLsns[1];
        long tail = darq.TailAddress;
        int unconsumed = darq.UnconsumedCount;

        var inMessage = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.CheckpointAsync([waiting.Lsn], ["s".Bytes()]));
        var activityMessage = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.CheckpointAsync([self, activity], ["s".Bytes()]));
        var already = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.CheckpointAsync([consumed.Lsn], []));
        var unknown = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.CheckpointAsync([self + 1], []));
        var twice = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.CheckpointAsync([self, self], []));
        var nothing = await Assert.ThrowsAsync<RpcException>(() => processor.CheckpointAsync([], ["s".Bytes()]));
        var oversized = await Assert.ThrowsAsync<RpcException>(() => processor.CheckpointAsync([self], [new byte[TestStorage.MaxMessageSize + 1]]));

        Assert.Equal((waiting.Lsn, DarqStepRejection.NotReplaceable), (inMessage.Lsn, inMessage.Reason));
        Assert.Equal((activity, DarqStepRejection.NotReplaceable), (activityMessage.Lsn, activityMessage.Reason));
        Assert.Equal((consumed.Lsn, DarqStepRejection.AlreadyConsumed), (already.Lsn, already.Reason));
        Assert.Equal(DarqStepRejection.UnknownMessage, unknown.Reason);
        Assert.Equal((self, DarqStepRejection.ConsumedTwiceInStep), (twice.Lsn, twice.Reason));
        Assert.Equal(new DarqStepRejectedException("orders", waiting.Lsn, DarqStepRejection.NotReplaceable).Message, inMessage.Message);
        Assert.All([nothing, oversized], e => Assert.Equal(StatusCode.InvalidArgument, e.StatusCode));
        Assert.Contains("replace is empty", nothing.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("MaxMessageSize", oversized.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(unconsumed, darq.UnconsumedCount);
    }

    [Fact]
    public async Task CheckpointAsync_StaleIncarnationOrUnknownDarq_IsRefusedAndChangesNothing()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        using var first = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        long self = (await first.StepAsync(new DarqStep().AddSelf("state".Bytes()))).SelfLsns[0];
        using var second = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        long tail = darq.TailAddress;
        var client = new DarqService.DarqServiceClient(server.Channel);

        var stale = await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => first.CheckpointAsync([self], ["s".Bytes()]));
        var unknown = await Assert.ThrowsAsync<RpcException>(async () =>
            await client.CheckpointAsync(new CheckpointRequest { Darq = "nope", Incarnation = second.Incarnation, Replace = { self } }));

        Assert.Equal((1, 2), (stale.Incarnation, stale.CurrentIncarnation));
        Assert.Equal(StatusCode.NotFound, unknown.StatusCode);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);

        // The current processor checkpoints what the stale one could not.
        var taken = await second.CheckpointAsync([self], []);
        Assert.Equal([self], taken.ReplacedLsns);
        Assert.Equal(0, darq.UnconsumedCount);
    }
}
