namespace Dse.Darq.Tests;

/// <summary>OUT delivery in batches: in order, exactly once, one ACK per batch, a refusal pinned on its message.</summary>
public sealed class DarqDeliveryBatchTests
{
    /// <summary>A guard against a hang, not a timing assertion: every wait here ends on an event.</summary>
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    private static Action<DarqOptions> Source(IDarqDestinations destinations, int batchSize) => o =>
    {
        DarqDeliveryTests.Source("a", destinations)(o);
        o.DeliveryBatchSize = batchSize;
        o.ParkedDeliveryRetryInterval = Timeout.InfiniteTimeSpan;
    };

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Deliver_ManyMessages_ArriveInOrderOnceInBatchesAndSurviveReopen()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        var destinations = new CountingDestinations(b);
        var aStorage = new DarqTestStorage();
        var expected = Enumerable.Range(0, 200).Select(i => $"m{i}").ToList();
        await using (var a = await aStorage.OpenAsync(Source(destinations, batchSize: 16)))
        {
            var processor = await a.RegisterProcessorAsync();
            DarqStepResult last = default;
            foreach (string text in expected)
            {
                last = await processor.StepAsync(new DarqStep().AddOut("b", text.Bytes()));
            }

            await a.CommitAsync();
            await a.WaitForDeliveredAsync(last.OutLsns[0], guard.Token);
            Assert.Equal(0, a.PendingOutCount);
        }

        // At most 16 per batch; and fewer batches than messages (they were all committed before the first pass).
        Assert.All(destinations.BatchSizes, size => Assert.InRange(size, 1, 16));
        Assert.True(destinations.BatchSizes.Count < expected.Count, $"{destinations.BatchSizes.Count} deliveries for {expected.Count} messages");
        Assert.Equal(expected, (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));

        // The multi-LSN ACK entries recover: nothing is pending or resent after a reopen.
        await using var reopened = await aStorage.OpenAsync(Source(destinations, batchSize: 16));
        Assert.Equal(0, reopened.PendingOutCount);
    }

    [Fact]
    public async Task Deliver_RefusalInsideABatch_DeliversTheMessagesBeforeItAndParksOnIt()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        await using var b = await new DarqTestStorage().OpenAsync(o =>
        {
            o.Name = "b";
            o.MaxMessageSize = 4;
        });
        var destinations = new CountingDestinations(b);
        await using var a = await new DarqTestStorage().OpenAsync(Source(destinations, batchSize: 8));
        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep()
            .AddOut("b", "1".Bytes()).AddOut("b", "2".Bytes()).AddOut("b", "too large".Bytes()).AddOut("b", "4".Bytes()));
        await a.CommitAsync();

        await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => a.WaitForDeliveredAsync(step.OutLsns[2], guard.Token).AsTask());
        await a.WaitForDeliveredAsync(step.OutLsns[1], guard.Token);
        Assert.Equal(step.OutLsns[2], Assert.Single(a.ParkedDeliveries).Lsn);
        Assert.Equal(2, a.PendingOutCount);

        Assert.True(await a.DiscardOutAsync(step.OutLsns[2], guard.Token));
        await a.WaitForDeliveredAsync(step.OutLsns[3], guard.Token);
        Assert.Equal(["1", "2", "4"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task ReceiveBatch_BadBatches_AreRefusedAndAppendNothing()
    {
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        long tail = b.TailAddress;

        await Assert.ThrowsAsync<ArgumentException>(() => b.ReceiveBatchDurablyAsync([], CancellationToken.None).AsTask());
        await Assert.ThrowsAsync<ArgumentException>(() => b.ReceiveBatchDurablyAsync(
            [new DarqDelivery("a", 64, "b", "1".Bytes()), new DarqDelivery("x", 72, "b", "2".Bytes())], CancellationToken.None).AsTask());
        await Assert.ThrowsAsync<ArgumentException>(() => b.ReceiveBatchDurablyAsync(
            [new DarqDelivery("a", 72, "b", "1".Bytes()), new DarqDelivery("a", 64, "b", "2".Bytes())], CancellationToken.None).AsTask());
        await Assert.ThrowsAsync<ArgumentException>(() => b.ReceiveBatchDurablyAsync(
            [new DarqDelivery("a", 64, "b", "1".Bytes()), new DarqDelivery("a", 72, "b", new byte[DarqTestStorage.PageSize])], CancellationToken.None).AsTask());

        Assert.Equal(tail, b.TailAddress);
        Assert.Equal(0, b.UnconsumedCount);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(DarqOptions.MaxDeliveryBatchSize + 1)]
    public async Task Open_DeliveryBatchSizeOutOfRange_IsRefused(int size)
    {
        var error = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => new DarqTestStorage().OpenAsync(o => o.DeliveryBatchSize = size));
        Assert.Equal(nameof(DarqOptions.DeliveryBatchSize), error.ParamName);
    }

    /// <summary>B in process, recording the size of every delivery (a single delivery counts as 1).</summary>
    private sealed class CountingDestinations(Darq b) : IDarqDestinations
    {
        private readonly IDarqDestination _inner = CreateInner(b);

        public List<int> BatchSizes { get; } = [];

        public IDarqDestination? Resolve(string name) => name == b.Name ? new Counting(this, _inner) : null;

        private static IDarqDestination CreateInner(Darq darq)
        {
            var registry = new DarqDestinationRegistry();
            registry.Add(darq);
            return registry.Resolve(darq.Name)!;
        }

        private sealed class Counting(CountingDestinations owner, IDarqDestination inner) : IDarqDestination
        {
            public ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken)
            {
                lock (owner.BatchSizes)
                {
                    owner.BatchSizes.Add(1);
                }

                return inner.DeliverAsync(delivery, cancellationToken);
            }

            public ValueTask DeliverBatchAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
            {
                lock (owner.BatchSizes)
                {
                    owner.BatchSizes.Add(deliveries.Count);
                }

                return inner.DeliverBatchAsync(deliveries, cancellationToken);
            }
        }
    }
}
