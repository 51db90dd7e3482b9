using Grpc.Core.Interceptors;
using Microsoft.AspNetCore.Builder;

namespace Dse.Darq.Grpc.Tests;

public sealed class OlderServerTests
{
    [Fact]
    public async Task DeliverBatchAsync_ServerWithoutDeliverBatch_FallsBackToDeliverOnceEachInOrderAndTheSourceAcknowledges()
    {
        await using var darqB = await new TestStorage("b").OpenAsync();
        await using var serverB = await DarqServer.StartAsync(0, configureServices: null, map: app => app.MapGrpcService<OlderDarqService>(), darqB);
        var calls = new CallCounter();
        var destinations = new DarqDestinationRegistry();
        destinations.Add("b", new GrpcDarqDestination(serverB.Channel.Intercept(calls)));
        var storageA = new TestStorage("a");
        var darqA = await storageA.OpenAsync(o =>
        {
            o.Destinations = destinations;
            o.DeliveryBatchSize = 16;
        });
        var expected = Enumerable.Range(0, 40).Select(i => $"m{i}").ToList();
        try
        {
            var processor = await darqA.RegisterProcessorAsync();
            long last = -1;
            foreach (string text in expected)
            {
                last = (await processor.StepAsync(new DarqStep().AddOut("b", text.Bytes()))).OutLsns[0];
            }

            // One commit: the delivery loop finds all 40 at once, so its first batch holds 16 and goes to DeliverBatch.
            await darqA.CommitAsync();
            await darqA.WaitForDeliveredAsync(last).AsTask().WaitAsync(TestText.Timeout);
            Assert.Equal(0, darqA.PendingOutCount);
            await darqA.CommitAsync();
        }
        finally
        {
            await darqA.DisposeAsync();
        }

        // Tried once, answered UNIMPLEMENTED, never again: every message went by Deliver, once.
        Assert.Equal(1, calls["DeliverBatch"]);
        Assert.Equal(expected.Count, calls["Deliver"]);
        var received = new List<string>();
        var processorB = await darqB.RegisterProcessorAsync();
        while (processorB.Messages.TryRead(out var message))
        {
            received.Add(message.Text());
        }

        Assert.Equal(expected, received);

        // The acknowledgements are in A's log: reopened, it has nothing left to send.
        await using var reopenedA = await storageA.OpenAsync(o => o.Destinations = destinations);
        Assert.Equal(0, reopenedA.PendingOutCount);
    }
}
