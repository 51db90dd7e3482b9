namespace Dse.Darq.Tests;

/// <summary>
/// Refusals for good park a destination: its messages stay pending (nothing lost), nothing more is sent there until a
/// retry, other destinations go on, and an operator can discard the refused message so the later ones flow.
/// </summary>
public sealed class DarqDeliveryParkingTests
{
    /// <summary>A guard against a hang, not a timing assertion: every wait here ends on an event.</summary>
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    private static Action<DarqOptions> Source(string name, IDarqDestinations destinations, TimeSpan? parkedRetry = null) => o =>
    {
        DarqDeliveryTests.Source(name, destinations)(o);
        o.ParkedDeliveryRetryInterval = parkedRetry ?? Timeout.InfiniteTimeSpan;
    };

    /// <summary>B takes payloads of at most 4 bytes.</summary>
    private static Action<DarqOptions> Small(string name) => o =>
    {
        o.Name = name;
        o.MaxMessageSize = 4;
    };

    [Fact]
    public async Task Deliver_PayloadTooLargeForDestination_ParksItKeepsTheMessageAndLetsOthersThrough()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(Small("b"));
        await using var c = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("c"));
        destinations.Registry.Add(b);
        destinations.Registry.Add(c);
        var aStorage = new DarqTestStorage();
        long big;
        long small;
        await using (var a = await aStorage.OpenAsync(Source("a", destinations)))
        {
            var processor = await a.RegisterProcessorAsync();
            var step = await processor.StepAsync(new DarqStep().AddOut("b", "too large".Bytes()).AddOut("b", "ok".Bytes()).AddOut("c", "c1".Bytes()));
            (big, small) = (step.OutLsns[0], step.OutLsns[1]);
            await a.CommitAsync();

            var refused = await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => a.WaitForDeliveredAsync(big, guard.Token).AsTask());
            Assert.Equal("b", refused.Destination);
            Assert.Contains("MaxMessageSize", refused.Reason, StringComparison.Ordinal);
            await a.WaitForDeliveredAsync(step.OutLsns[2], guard.Token);

            // Parked, not lost: both messages to B are pending, the later one held behind the refused one, and the
            // step stays in the log.
            var parked = Assert.Single(a.ParkedDeliveries);
            Assert.Equal(("b", big), (parked.Destination, parked.Lsn));
            Assert.True(parked.Refusals >= 1);
            Assert.Equal(2, a.PendingOutCount);
            Assert.True(await a.TruncateAsync() <= big);
            Assert.Equal(0, b.UnconsumedCount);
            await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => a.WaitForDeliveredAsync(big, guard.Token).AsTask());

            // The operator gives the refused message up: the next one flows, and only it arrives.
            Assert.True(await a.DiscardOutAsync(big, guard.Token));
            await a.WaitForDeliveredAsync(small, guard.Token);
            await a.WaitForDeliveredAsync(big, guard.Token);
            Assert.Empty(a.ParkedDeliveries);
            Assert.Equal(0, a.PendingOutCount);
            Assert.Equal(["ok"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
            Assert.False(await a.DiscardOutAsync(big, guard.Token));
            Assert.False(await a.DiscardOutAsync(small, guard.Token));
        }

        // The discard is in the log: a reopened source neither holds nor sends the message again.
        await using var reopened = await aStorage.OpenAsync(Source("a", destinations));
        Assert.Equal(0, reopened.PendingOutCount);
        Assert.Empty(reopened.ParkedDeliveries);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Reopen_ParkedMessageNotDiscarded_IsStillPendingAndRefusedAgain()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(Small("b"));
        destinations.Registry.Add(b);
        var aStorage = new DarqTestStorage();
        long big;
        await using (var a = await aStorage.OpenAsync(Source("a", destinations)))
        {
            var processor = await a.RegisterProcessorAsync();
            big = (await processor.StepAsync(new DarqStep().AddOut("b", "too large".Bytes()))).OutLsns[0];
            await a.CommitAsync();
            await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => a.WaitForDeliveredAsync(big, guard.Token).AsTask());
        }

        await using var reopened = await aStorage.OpenAsync(Source("a", destinations));
        Assert.Equal(1, reopened.PendingOutCount);
        await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => reopened.WaitForDeliveredAsync(big, guard.Token).AsTask());
        Assert.Equal(big, Assert.Single(reopened.ParkedDeliveries).Lsn);
    }

    [Fact]
    public async Task PendingOutCountAsync_TwoDestinationsOneParked_CountsEachDestinationsOwnMessages()
    {
        // B refuses the large message for good and is parked with the next one behind it; C is unknown, so its three
        // messages stay pending and are retried, not parked. Neither count can change until the operator acts.
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(Small("b"));
        destinations.Registry.Add(b);
        await using var a = await new DarqTestStorage().OpenAsync(Source("a", destinations));
        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep()
            .AddOut("b", "too large".Bytes()).AddOut("c", "c1".Bytes()).AddOut("b", "ok".Bytes()).AddOut("c", "c2".Bytes()).AddOut("c", "c3".Bytes()));
        await a.CommitAsync();
        await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token).AsTask());
        await destinations.Unknown.WaitAsync(guard.Token);

        Assert.Equal("b", Assert.Single(a.ParkedDeliveries).Destination);
        Assert.Equal(2, await a.PendingOutCountAsync("b", guard.Token));
        Assert.Equal(3, await a.PendingOutCountAsync("c", guard.Token));
        Assert.Equal(0, await a.PendingOutCountAsync("nobody", guard.Token));
        Assert.Equal(5, a.PendingOutCount);

        // The operator gives the refused message up: the one behind it is delivered, and C's are still all pending.
        Assert.True(await a.DiscardOutAsync(step.OutLsns[0], guard.Token));
        await a.WaitForDeliveredAsync(step.OutLsns[2], guard.Token);
        Assert.Equal(0, await a.PendingOutCountAsync("b", guard.Token));
        Assert.Equal(3, await a.PendingOutCountAsync("c", guard.Token));
        Assert.Equal(3, a.PendingOutCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task PendingOutCountAsync_DiscardsOutOfOrderAndAReopen_KeepEachDestinationsCountAndEarliestMessage()
    {
        // No delivery loop: only discards take messages away, in the order the test picks. Each destination's count and
        // earliest pending message (what the delivery-order check after a restore looks up) follow them, and a reopen
        // rebuilds both from the log.
        using var guard = new CancellationTokenSource(HangGuard);
        var storage = new DarqTestStorage();
        long[] lsns;
        await using (var a = await storage.OpenAsync(DarqDeliveryTests.Named("a")))
        {
            var processor = await a.RegisterProcessorAsync(guard.Token);
            var step = await processor.StepAsync(new DarqStep()
                .AddOut("b", "b1".Bytes()).AddOut("c", "c1".Bytes()).AddOut("b", "b2".Bytes())
                .AddOut("b", "b3".Bytes()).AddOut("c", "c2".Bytes()).AddOut("b", "b4".Bytes()), guard.Token);
            lsns = [.. step.OutLsns];
            await a.CommitAsync(guard.Token);
            Assert.Equal(4, await a.PendingOutCountAsync("b", guard.Token));
            Assert.Equal(2, await a.PendingOutCountAsync("c", guard.Token));
            Assert.Equal(lsns[0], a.EarliestPendingOut("b"));
            Assert.Equal(lsns[1], a.EarliestPendingOut("c"));

            // b2 goes first (behind b1), then b1: b's earliest skips both, to b3.
            Assert.True(await a.DiscardOutAsync(lsns[2], guard.Token));
            Assert.Equal(3, await a.PendingOutCountAsync("b", guard.Token));
            Assert.Equal(lsns[0], a.EarliestPendingOut("b"));
            Assert.True(await a.DiscardOutAsync(lsns[0], guard.Token));
            Assert.Equal(2, await a.PendingOutCountAsync("b", guard.Token));
            Assert.Equal(lsns[3], a.EarliestPendingOut("b"));

            // c's last message goes; its first stays the earliest.
            Assert.True(await a.DiscardOutAsync(lsns[4], guard.Token));
            Assert.Equal(1, await a.PendingOutCountAsync("c", guard.Token));
            Assert.Equal(lsns[1], a.EarliestPendingOut("c"));
            Assert.False(await a.DiscardOutAsync(lsns[2], guard.Token));
        }

        await using var reopened = await storage.OpenAsync(DarqDeliveryTests.Named("a"));
        Assert.Equal(3, reopened.PendingOutCount);
        Assert.Equal(2, await reopened.PendingOutCountAsync("b", guard.Token));
        Assert.Equal(1, await reopened.PendingOutCountAsync("c", guard.Token));
        Assert.Equal(lsns[3], reopened.EarliestPendingOut("b"));
        Assert.Equal(lsns[1], reopened.EarliestPendingOut("c"));

        // The last of a destination's messages gone: nothing is pending to it, and it is forgotten.
        Assert.True(await reopened.DiscardOutAsync(lsns[3], guard.Token));
        Assert.True(await reopened.DiscardOutAsync(lsns[5], guard.Token));
        Assert.Equal(0, await reopened.PendingOutCountAsync("b", guard.Token));
        Assert.Equal(-1, reopened.EarliestPendingOut("b"));
        Assert.Equal(1, reopened.PendingOutCount);
    }

    [Fact]
    public async Task Deliver_RefusedTwiceThenAccepted_AutomaticRetryDeliversOnce()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        var destinations = new FlakyDestinations(b, refusals: 2, transientFailures: 0);
        await using var a = await new DarqTestStorage().OpenAsync(Source("a", destinations, parkedRetry: TimeSpan.FromMilliseconds(10)));
        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()));
        await a.CommitAsync();

        await destinations.Delivered.Task.WaitAsync(guard.Token);
        await WaitForDeliveredIgnoringRefusalsAsync(a, step.OutLsns[0], guard.Token);

        Assert.Equal(3, destinations.Attempts);
        Assert.Empty(a.ParkedDeliveries);
        Assert.Equal(["x"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Deliver_TransientFailures_AreRetriedWithoutParking()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        var destinations = new FlakyDestinations(b, refusals: 0, transientFailures: 3);
        await using var a = await new DarqTestStorage().OpenAsync(Source("a", destinations));
        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()));
        await a.CommitAsync();

        // Never parked (the retry interval is infinite, so a parking would hang here), and no refusal surfaces.
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);
        Assert.Equal(4, destinations.Attempts);
        Assert.Empty(a.ParkedDeliveries);
    }

    [Fact]
    public async Task Deliver_RefusedThenTransient_IsNoLongerParkedAndBackoffDeliversIt()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        var destinations = new FlakyDestinations(b, refusals: 1, transientFailures: 2);
        await using var a = await new DarqTestStorage().OpenAsync(Source("a", destinations));
        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()));
        await a.CommitAsync();

        await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token).AsTask());
        Assert.True(a.RetryParkedDelivery("b"));
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);
        Assert.Equal(4, destinations.Attempts);
        Assert.Empty(a.ParkedDeliveries);
    }

    [Fact]
    public async Task DiscardAndRetry_BadArguments_AreRefusedOrChangeNothing()
    {
        var destinations = new TestDestinations();
        await using var a = await new DarqTestStorage().OpenAsync(Source("a", destinations));
        var enqueued = await a.EnqueueAsync("in".Bytes());
        long tail = a.TailAddress;

        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => a.DiscardOutAsync(-1).AsTask());
        Assert.False(await a.DiscardOutAsync(enqueued.Lsn));
        Assert.False(await a.DiscardOutAsync(123_456));
        Assert.Throws<ArgumentException>(() => a.RetryParkedDelivery(""));
        await Assert.ThrowsAsync<ArgumentException>(() => a.PendingOutCountAsync("").AsTask());
        Assert.False(a.RetryParkedDelivery("nobody"));
        Assert.Equal(tail, a.TailAddress);
        Assert.Equal(1, a.UnconsumedCount);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(-5)]
    public async Task Open_ParkedRetryIntervalNotPositive_IsRefused(int milliseconds)
    {
        var error = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() =>
            new DarqTestStorage().OpenAsync(o => o.ParkedDeliveryRetryInterval = TimeSpan.FromMilliseconds(milliseconds)));
        Assert.Equal(nameof(DarqOptions.ParkedDeliveryRetryInterval), error.ParamName);
    }

    [Fact]
    public async Task Discard_GeneralSpeculation_ParkedMessageGivenUpOnceRecoverable()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(Small("b"));
        destinations.Registry.Add(b);
        await using var a = await new DarqTestStorage().OpenAsync(o =>
        {
            DarqGeneralSpeculationTests.General("a", 1, coordinator, destinations)(o);
            o.ParkedDeliveryRetryInterval = Timeout.InfiniteTimeSpan;
        });
        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("b", "too large".Bytes()).AddOut("b", "ok".Bytes()));

        // B is outside the cluster: A sends only once the step is recoverable, then B refuses the first message.
        await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token).AsTask());

        // The discard is an action: it returns once recoverable, which takes another version.
        var discard = a.DiscardOutAsync(step.OutLsns[0], guard.Token).AsTask();
        while (!discard.IsCompleted)
        {
            await a.DseStateObject.AdvanceVersionAsync(guard.Token);
            await Task.WhenAny(discard, Task.Delay(10, guard.Token));
        }

        Assert.True(await discard);
        await a.WaitForDeliveredAsync(step.OutLsns[1], guard.Token);
        Assert.Equal(["ok"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    /// <summary>Waits for delivery, going on past refusals (the destination is retried automatically).</summary>
    private static async Task WaitForDeliveredIgnoringRefusalsAsync(Darq darq, long lsn, CancellationToken cancellationToken)
    {
        while (true)
        {
            try
            {
                await darq.WaitForDeliveredAsync(lsn, cancellationToken);
                return;
            }
            catch (DarqDeliveryRefusedException)
            {
                await Task.Delay(5, cancellationToken);
            }
        }
    }

    /// <summary>B behind a destination that first refuses for good, then fails transiently, as many times as asked, then delivers.</summary>
    private sealed class FlakyDestinations(Darq b, int refusals, int transientFailures) : IDarqDestinations
    {
        private readonly DarqDestinationRegistry _registry = CreateRegistry(b);
        private int _attempts;

        public int Attempts => Volatile.Read(ref _attempts);

        public int Refusals => refusals;

        public int TransientFailures => transientFailures;

        public TaskCompletionSource Delivered { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public IDarqDestination? Resolve(string name) => name == b.Name ? new Flaky(this, _registry.Resolve(name)!) : null;

        private static DarqDestinationRegistry CreateRegistry(Darq darq)
        {
            var registry = new DarqDestinationRegistry();
            registry.Add(darq);
            return registry;
        }

        private sealed class Flaky(FlakyDestinations owner, IDarqDestination inner) : IDarqDestination
        {
            public async ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken)
            {
                int attempt = Interlocked.Increment(ref owner._attempts);
                if (attempt <= owner.Refusals)
                {
                    throw new DarqDeliveryRefusedException(delivery.Destination, $"refusal {attempt}");
                }

                if (attempt <= owner.Refusals + owner.TransientFailures)
                {
                    throw new IOException($"transient failure {attempt}");
                }

                await inner.DeliverAsync(delivery, cancellationToken);
                owner.Delivered.TrySetResult();
            }
        }
    }
}
