using Dse.Darq.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Net.Client;

namespace Dse.Darq.Grpc.Tests;

public sealed class RemoteDeliveryTests
{
    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Delivery_AcrossServersWithLostAckAndDestinationRestart_ArrivesExactlyOnce()
    {
        var storageA = new TestStorage("a");
        var storageB = new TestStorage("b");
        var darqB = await storageB.OpenAsync();
        var serverB = await DarqServer.StartAsync(darqB);
        int portB = serverB.Port;
        using var channelToB = GrpcChannel.ForAddress(serverB.Address);
        var toB = new ObservedDestination("b", new GrpcDarqDestination(channelToB));
        toB.DropNextAcknowledgement();
        await using var darqA = await storageA.OpenAsync(o => o.Destinations = toB);
        await using var serverA = await DarqServer.StartAsync(darqA);
        var producer = new RemoteDarqProducer(serverA.Channel, "a", producerId: 1);
        using var processorA = await RemoteDarqProcessor.RegisterAsync(serverA.Channel, "a");
        await using var inA = processorA.ReadAllAsync().GetAsyncEnumerator();

        // 1: delivered, the acknowledgement lost, resent: B deduplicates by (source, source LSN).
        await producer.EnqueueAsync("in-1".Bytes());
        var first = await processorA.StepAsync(new DarqStep().Consume((await inA.TakeAsync(1))[0]).AddOut("b", "out-1".Bytes()), waitDurable: true);
        await darqA.WaitForDeliveredAsync(first.OutLsns[0]).AsTask().WaitAsync(TestText.Timeout);
        Assert.Equal(2, toB.Attempts);
        Assert.Equal(1, darqB.UnconsumedCount);

        // 2: B's server and DARQ go down; A keeps the message pending and retries.
        await serverB.DisposeAsync();
        await darqB.DisposeAsync();
        await producer.EnqueueAsync("in-2".Bytes());
        var second = await processorA.StepAsync(new DarqStep().Consume((await inA.TakeAsync(1))[0]).AddOut("b", "out-2".Bytes()), waitDurable: true);
        await toB.FirstFailure.WaitAsync(TestText.Timeout);
        Assert.Equal(1, darqA.PendingOutCount);

        // 3: B comes back from its storage on the same address; A's retry gets through.
        await using var reopenedB = await storageB.OpenAsync();
        await using var restartedB = await DarqServer.RestartAsync(portB, reopenedB);
        if (restartedB.Port != portB)
        {
            // The point is the retry, not the port.
            toB.Redirect(new GrpcDarqDestination(restartedB.Channel));
        }

        await darqA.WaitForDeliveredAsync(second.OutLsns[0]).AsTask().WaitAsync(TestText.Timeout);

        Assert.Equal(0, darqA.PendingOutCount);
        var processorB = await reopenedB.RegisterProcessorAsync();
        var received = new List<string>();
        while (processorB.Messages.TryRead(out var message))
        {
            received.Add(message.Text());
        }

        Assert.Equal(["out-1", "out-2"], received);
    }

    [Fact]
    public async Task Delivery_RemoteHostsNoSuchDarq_ParksTheDestinationAndDiscardLetsTheNextOneThrough()
    {
        await using var darqB = await new TestStorage("b").OpenAsync();
        await using var serverB = await DarqServer.StartAsync(darqB);
        using var channelToB = GrpcChannel.ForAddress(serverB.Address);

        // "misnamed" maps to a DARQ the server does not host (NOT_FOUND) until the operator fixes the mapping.
        var destinations = new DarqDestinationRegistry();
        destinations.Add("misnamed", new GrpcDarqDestination(channelToB, remoteName: "nope"));
        await using var darqA = await new TestStorage("a").OpenAsync(o =>
        {
            o.Destinations = destinations;
            o.ParkedDeliveryRetryInterval = Timeout.InfiniteTimeSpan;
        });
        var processor = await darqA.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("misnamed", "1".Bytes()).AddOut("misnamed", "2".Bytes()));
        await darqA.CommitAsync();

        var refused = await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => darqA.WaitForDeliveredAsync(step.OutLsns[0]).AsTask().WaitAsync(TestText.Timeout));
        Assert.Equal("misnamed", refused.Destination);
        Assert.Contains("NotFound", refused.Reason, StringComparison.Ordinal);
        Assert.Contains("'nope'", refused.Reason, StringComparison.Ordinal);
        Assert.Equal(step.OutLsns[0], Assert.Single(darqA.ParkedDeliveries).Lsn);
        Assert.Equal(2, darqA.PendingOutCount);

        // Fixed: the first message is given up on purpose, the retry sends the second to the right DARQ.
        destinations.Add("misnamed", new GrpcDarqDestination(channelToB, remoteName: "b"));
        Assert.True(await darqA.DiscardOutAsync(step.OutLsns[0]));
        await darqA.WaitForDeliveredAsync(step.OutLsns[1]).AsTask().WaitAsync(TestText.Timeout);
        Assert.Equal(0, darqA.PendingOutCount);
        var received = new List<string>();
        var processorB = await darqB.RegisterProcessorAsync();
        while (processorB.Messages.TryRead(out var message))
        {
            received.Add(message.Text());
        }

        Assert.Equal(["2"], received);
    }

    [Fact]
    public async Task DeliverAsync_RefusalsForGoodAndTransientFailures_AreToldApart()
    {
        await using var darq = await new TestStorage("b").OpenAsync();
        var server = await DarqServer.StartAsync(darq);
        using var channel = GrpcChannel.ForAddress(server.Address);
        var destination = new GrpcDarqDestination(channel);

        var oversized = await Assert.ThrowsAsync<DarqDeliveryRefusedException>(async () =>
            await destination.DeliverAsync(new DarqDelivery("a", 64, "b", new byte[TestStorage.MaxMessageSize + 1]), CancellationToken.None));
        var unknown = await Assert.ThrowsAsync<DarqDeliveryRefusedException>(async () =>
            await destination.DeliverAsync(new DarqDelivery("a", 64, "c", "x".Bytes()), CancellationToken.None));
        Assert.Equal(StatusCode.InvalidArgument, Assert.IsType<RpcException>(oversized.InnerException).StatusCode);
        Assert.Equal(StatusCode.NotFound, Assert.IsType<RpcException>(unknown.InnerException).StatusCode);
        Assert.Equal(0, darq.UnconsumedCount);

        // A server that is gone is transient: a plain RpcException, not a refusal, retried with backoff. Its status is
        // UNAVAILABLE, or INTERNAL when the call still went out on the connection the server was closing (a race of the
        // HTTP/2 client; CI saw it once); both are transient to the delivery loop.
        await server.DisposeAsync();
        var down = await Assert.ThrowsAsync<RpcException>(async () =>
            await destination.DeliverAsync(new DarqDelivery("a", 64, "b", "x".Bytes()), CancellationToken.None));
        Assert.Contains(down.StatusCode, (StatusCode[])[StatusCode.Unavailable, StatusCode.Internal]);
    }

    [Fact]
    public async Task Delivery_ManyMessagesAcrossServers_ArriveInOrderOnceInBatches()
    {
        await using var darqB = await new TestStorage("b").OpenAsync();
        await using var serverB = await DarqServer.StartAsync(darqB);
        using var channelToB = GrpcChannel.ForAddress(serverB.Address);
        var destinations = new DarqDestinationRegistry();
        destinations.Add("b", new GrpcDarqDestination(channelToB));
        await using var darqA = await new TestStorage("a").OpenAsync(o =>
        {
            o.Destinations = destinations;
            o.DeliveryBatchSize = 32;
        });
        var processor = await darqA.RegisterProcessorAsync();
        var expected = Enumerable.Range(0, 100).Select(i => $"m{i}").ToList();
        long last = -1;
        foreach (string text in expected)
        {
            last = (await processor.StepAsync(new DarqStep().AddOut("b", text.Bytes()))).OutLsns[0];
        }

        await darqA.CommitAsync();
        await darqA.WaitForDeliveredAsync(last).AsTask().WaitAsync(TestText.Timeout);

        var received = new List<string>();
        var processorB = await darqB.RegisterProcessorAsync();
        while (processorB.Messages.TryRead(out var message))
        {
            received.Add(message.Text());
        }

        Assert.Equal(expected, received);
        Assert.Equal(0, darqA.PendingOutCount);
    }

    [Fact]
    public async Task DeliverBatch_ResendAndBadBatches_AreDuplicatesOrRefusedAndChangeNothing()
    {
        await using var darq = await new TestStorage("b").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var client = new DarqService.DarqServiceClient(server.Channel);
        var request = new DeliverBatchRequest { Darq = "b", Source = "a" };
        request.Messages.Add(new DeliveredMessage { SourceLsn = 64, Payload = ByteString.CopyFromUtf8("1") });
        request.Messages.Add(new DeliveredMessage { SourceLsn = 128, Payload = ByteString.CopyFromUtf8("2") });

        var first = await client.DeliverBatchAsync(request);
        Assert.True(darq.CommittedUntilAddress >= darq.TailAddress, "the acknowledgement comes only once the batch is durable");
        long tail = darq.TailAddress;
        var resent = await client.DeliverBatchAsync(request);
        Assert.All(first.Lsns, lsn => Assert.True(lsn >= 0));
        Assert.Equal([-1L, -1L], resent.Lsns);

        var outOfOrder = new DeliverBatchRequest { Darq = "b", Source = "a" };
        outOfOrder.Messages.Add(new DeliveredMessage { SourceLsn = 512, Payload = ByteString.CopyFromUtf8("3") });
        outOfOrder.Messages.Add(new DeliveredMessage { SourceLsn = 256, Payload = ByteString.CopyFromUtf8("4") });
        var oversized = new DeliverBatchRequest { Darq = "b", Source = "a" };
        oversized.Messages.Add(new DeliveredMessage { SourceLsn = 512, Payload = ByteString.CopyFromUtf8("5") });
        oversized.Messages.Add(new DeliveredMessage { SourceLsn = 640, Payload = ByteString.CopyFrom(new byte[TestStorage.MaxMessageSize + 1]) });
        var errors = new[]
        {
            await Assert.ThrowsAsync<RpcException>(async () => await client.DeliverBatchAsync(outOfOrder)),
            await Assert.ThrowsAsync<RpcException>(async () => await client.DeliverBatchAsync(oversized)),
            await Assert.ThrowsAsync<RpcException>(async () => await client.DeliverBatchAsync(new DeliverBatchRequest { Darq = "b", Source = "a" })),
            await Assert.ThrowsAsync<RpcException>(async () => await client.DeliverBatchAsync(new DeliverBatchRequest { Darq = "b" })),
        };
        var unknown = await Assert.ThrowsAsync<RpcException>(async () => await client.DeliverBatchAsync(new DeliverBatchRequest { Darq = "c", Source = "a" }));

        Assert.All(errors, e => Assert.Equal(StatusCode.InvalidArgument, e.StatusCode));
        Assert.Equal(StatusCode.NotFound, unknown.StatusCode);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(2, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Deliver_Resend_IsDuplicateAndAcknowledgedOnlyWhenDurable()
    {
        await using var darq = await new TestStorage("b").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var client = new DarqService.DarqServiceClient(server.Channel);
        var request = new DeliverRequest { Darq = "b", Source = "a", SourceLsn = 64, Payload = ByteString.CopyFromUtf8("x") };

        var first = await client.DeliverAsync(request);
        Assert.True(darq.CommittedUntilAddress >= darq.TailAddress, "the acknowledgement comes only once the message is durable");
        long tail = darq.TailAddress;
        var resent = await client.DeliverAsync(request);

        Assert.False(first.Duplicate);
        Assert.True(resent.Duplicate);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task DeliverAsync_Cancelled_ThrowsOperationCanceledSoTheDeliveryLoopEndsQuietly()
    {
        await using var darq = await new TestStorage("billing").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var destination = new GrpcDarqDestination(server.Channel);

        // The delivery loop takes only OperationCanceledException for its own cancellation (a closing DARQ); anything
        // else is logged as a failed delivery.
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => destination.DeliverAsync(
            new DarqDelivery("orders", 1, "billing", "bill-1".Bytes()), new CancellationToken(canceled: true)).AsTask().WaitAsync(TestText.Timeout));
        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Deliver_BadRequests_AreRefusedAndChangeNothing()
    {
        await using var darq = await new TestStorage("b").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var client = new DarqService.DarqServiceClient(server.Channel);
        long tail = darq.TailAddress;

        var unknown = await Assert.ThrowsAsync<RpcException>(async () =>
            await client.DeliverAsync(new DeliverRequest { Darq = "c", Source = "a", SourceLsn = 64 }));
        var noSource = await Assert.ThrowsAsync<RpcException>(async () =>
            await client.DeliverAsync(new DeliverRequest { Darq = "b", SourceLsn = 64 }));
        var negative = await Assert.ThrowsAsync<RpcException>(async () =>
            await client.DeliverAsync(new DeliverRequest { Darq = "b", Source = "a", SourceLsn = -1 }));
        var oversized = await Assert.ThrowsAsync<RpcException>(async () =>
            await client.DeliverAsync(new DeliverRequest { Darq = "b", Source = "a", SourceLsn = 64, Payload = ByteString.CopyFrom(new byte[TestStorage.MaxMessageSize + 1]) }));

        Assert.Equal(StatusCode.NotFound, unknown.StatusCode);
        Assert.Equal(StatusCode.InvalidArgument, noSource.StatusCode);
        Assert.Contains("source", noSource.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(StatusCode.InvalidArgument, negative.StatusCode);
        Assert.Equal(StatusCode.InvalidArgument, oversized.StatusCode);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(0, darq.UnconsumedCount);
    }
}
