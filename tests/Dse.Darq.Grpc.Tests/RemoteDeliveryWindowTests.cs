using System.Globalization;
using Dse.Darq.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// Pipelined delivery over gRPC: append-only <c>DeliverBatch</c> calls acknowledged by <c>WaitForCommit</c> on the
/// instance that appended them, and a destination restart with a full window in flight, after which every message
/// arrives once and in order.
/// </summary>
public sealed class RemoteDeliveryWindowTests
{
    [Fact]
    public async Task DeliverBatch_AppendOnly_RepliesBeforeTheCommitWithWhatToAwait()
    {
        await using var darq = await new TestStorage("b").OpenAsync(o => o.CommitInterval = TimeSpan.FromHours(1));
        await using var server = await DarqServer.StartAsync(darq);
        var client = new DarqService.DarqServiceClient(server.Channel);
        var request = new DeliverBatchRequest { Darq = "b", Source = "a", AppendOnly = true };
        request.Messages.Add(new DeliveredMessage { SourceLsn = 64, Payload = ByteString.CopyFromUtf8("x") });
        request.Messages.Add(new DeliveredMessage { SourceLsn = 96, Payload = ByteString.CopyFromUtf8("y") });

        // Appended, not committed: the reply names the address and the instance to wait on.
        var reply = await client.DeliverBatchAsync(request).ResponseAsync.WaitAsync(TestText.Timeout);
        Assert.Equal(2, reply.Lsns.Count);
        Assert.NotEqual(0, reply.Instance);
        Assert.True(reply.DurableAt > darq.CommittedUntilAddress);

        // The wait on that instance completes once the DARQ commits.
        var wait = client.WaitForCommitAsync(new WaitForCommitRequest { Darq = "b", Address = reply.DurableAt, Instance = reply.Instance }).ResponseAsync;
        await darq.CommitAsync();
        Assert.True((await wait.WaitAsync(TestText.Timeout)).CommittedUntil >= reply.DurableAt);

        // Expecting another instance: refused, nothing appended.
        request.ExpectedInstance = reply.Instance + 1;
        request.Messages.Clear();
        request.Messages.Add(new DeliveredMessage { SourceLsn = 128, Payload = ByteString.CopyFromUtf8("z") });
        var refused = await Assert.ThrowsAsync<RpcException>(() => client.DeliverBatchAsync(request).ResponseAsync.WaitAsync(TestText.Timeout));
        Assert.Equal(StatusCode.Unavailable, refused.StatusCode);
        Assert.Equal(DarqRpcErrors.InstanceChanged, refused.Trailers.GetValue(DarqRpcErrors.ErrorKey));
        Assert.Equal(2, darq.UnconsumedCount);

        // Expecting this one: appended.
        request.ExpectedInstance = reply.Instance;
        Assert.Single((await client.DeliverBatchAsync(request).ResponseAsync.WaitAsync(TestText.Timeout)).Lsns);
        Assert.Equal(3, darq.UnconsumedCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Delivery_DestinationRestartsWithAFullWindowInFlight_EachMessageArrivesOnceInOrder()
    {
        var storageB = new TestStorage("b");
        var darqB = await storageB.OpenAsync(o => o.CommitInterval = TimeSpan.FromHours(1));
        var serverB = await DarqServer.StartAsync(darqB);
        int portB = serverB.Port;
        using var destinations = new GrpcDarqDestinations();
        destinations.Add("b", serverB.Address);
        await using var darqA = await new TestStorage("a").OpenAsync(o =>
        {
            o.Destinations = destinations;
            o.DeliveryBatchSize = 4;
            o.DeliveryWindow = 3;
        });
        var processor = await darqA.RegisterProcessorAsync();
        long last = -1;
        for (int i = 0; i < 40; i++)
        {
            last = (await processor.StepAsync(new DarqStep().AddOut("b", Text(i).Bytes()))).OutLsns[0];
        }

        await darqA.CommitAsync();

        // Three batches are appended at B and waited on, none committed there.
        var processorB = await darqB.RegisterProcessorAsync();
        for (int i = 0; i < 12; i++)
        {
            await processorB.Messages.ReadAsync().AsTask().WaitAsync(TestText.Timeout);
        }

        Assert.Equal(40, darqA.PendingOutCount);

        // B goes down with them: its server first (the waits end unacknowledged), then its DARQ, from a copy of its
        // storage taken before anything of the window was committed.
        var beforeWindow = storageB.Snapshot();
        await serverB.DisposeAsync();
        await darqB.DisposeAsync();

        // B comes back on its storage as it was: the window is lost there, and A sends it again, once and in order.
        await using var reopenedB = await beforeWindow.OpenAsync();
        Assert.Equal(0, reopenedB.UnconsumedCount);
        await using var restartedB = await DarqServer.RestartAsync(portB, reopenedB);
        if (restartedB.Port != portB)
        {
            destinations.Add("b", restartedB.Address);
        }

        await darqA.WaitForDeliveredAsync(last).AsTask().WaitAsync(TestText.Timeout);
        Assert.Equal(0, darqA.PendingOutCount);
        var received = new List<string>();
        var reopenedProcessor = await reopenedB.RegisterProcessorAsync();
        while (reopenedProcessor.Messages.TryRead(out var message))
        {
            received.Add(message.Text());
        }

        Assert.Equal(Enumerable.Range(0, 40).Select(Text), received);
    }

    private static string Text(int value) => value.ToString(CultureInfo.InvariantCulture);
}
