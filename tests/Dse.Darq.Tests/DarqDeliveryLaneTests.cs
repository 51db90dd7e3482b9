using Dse.Testing;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Time.Testing;
using Xunit.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>
/// Delivery lanes: each destination is delivered to on its own (in LSN order, with its own backoff), so a destination
/// that blocks or keeps failing does not hold up the others; the number delivering at once is bounded.
/// </summary>
public sealed class DarqDeliveryLaneTests(ITestOutputHelper output)
{
    /// <summary>A guard against a hang, not a timing assertion: every wait here ends on an event.</summary>
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    // DARQ log events (DarqLogMessages): a destination backs off; a delivery attempt failed (expected here, so left out
    // of failure messages).
    private const int DeliveryBackoff = 4250;
    private const int DeliveryFailed = 4012;

    [Fact]
    public async Task Deliver_OneDestinationBlocked_OthersAreDeliveredAndItGetsEverythingInOrderOnceReleased()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new LaneDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        await using var c = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("c"));
        destinations.Registry.Add(b);
        destinations.Registry.Add(c);
        var release = destinations.Block("b");
        await using var a = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Source("a", destinations));
        var processor = await a.RegisterProcessorAsync();
        var first = await processor.StepAsync(new DarqStep().AddOut("b", "b1".Bytes()).AddOut("c", "c1".Bytes()).AddOut("b", "b2".Bytes()).AddOut("c", "c2".Bytes()));
        await a.CommitAsync();

        // B's delivery hangs (its first message is with the destination, unanswered) while C's messages go through.
        await destinations.Entered("b").WaitAsync(guard.Token);
        await a.WaitForDeliveredAsync(first.OutLsns[1], guard.Token);
        await a.WaitForDeliveredAsync(first.OutLsns[3], guard.Token);

        // C keeps flowing: a later step's message to C is delivered past B's earlier ones.
        var second = await processor.StepAsync(new DarqStep().AddOut("c", "c3".Bytes()).AddOut("b", "b3".Bytes()));
        await a.CommitAsync();
        await a.WaitForDeliveredAsync(second.OutLsns[0], guard.Token);
        Assert.Equal(3, a.PendingOutCount);
        Assert.Equal(["c1", "c2", "c3"], (await c.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
        Assert.Equal(0, b.UnconsumedCount);
        Assert.Contains(a.DeliveryLanes, l => l is { Destination: "b", Delivering: true, Failures: 0 });

        // Released, B gets its messages in LSN order, each once, and no message was sent to it twice.
        release.SetResult();
        await a.WaitForDeliveredAsync(first.OutLsns[0], guard.Token);
        await a.WaitForDeliveredAsync(first.OutLsns[2], guard.Token);
        await a.WaitForDeliveredAsync(second.OutLsns[1], guard.Token);
        Assert.Equal(0, a.PendingOutCount);
        Assert.Equal(["b1", "b2", "b3"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
        Assert.Equal(3, destinations.Attempts("b"));
        Assert.Equal(3, destinations.Attempts("c"));
    }

    [Fact]
    public async Task Deliver_OneDestinationKeepsFailing_ItBacksOffAloneWhileOthersFlow()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var time = new FakeTimeProvider();
        var events = new LogCapture();
        var destinations = new LaneDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        await using var c = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("c"));
        destinations.Registry.Add(b);
        destinations.Registry.Add(c);
        destinations.SetFailing("b", true);

        // Backoff of minutes on a clock the test moves: on a single loop, C's later messages would wait for B's backoff.
        await using var a = await new DarqTestStorage().OpenAsync(o =>
        {
            DarqDeliveryTests.Source("a", destinations)(o);
            o.TimeProvider = time;
            o.DeliveryRetryMinDelay = TimeSpan.FromMinutes(1);
            o.DeliveryRetryMaxDelay = TimeSpan.FromMinutes(4);
        }, events);
        var processor = await a.RegisterProcessorAsync();
        var first = await processor.StepAsync(new DarqStep().AddOut("b", "b1".Bytes()).AddOut("c", "c1".Bytes()));
        await a.CommitAsync();
        await events.WaitForCountAsync(DeliveryBackoff, 1, guard.Token);
        await a.WaitForDeliveredAsync(first.OutLsns[1], guard.Token);
        Assert.Equal(new DarqDeliveryLane("b", false, 1, time.GetUtcNow() + TimeSpan.FromMinutes(1)), Assert.Single(a.DeliveryLanes, l => l.Destination == "b"));

        // While B fails again and again (its backoff doubling: 1, then 2 minutes), C's new messages go at once.
        var delay = TimeSpan.FromMinutes(1);
        for (int k = 2; k <= 3; k++)
        {
            var step = await processor.StepAsync(new DarqStep().AddOut("c", $"c{k}".Bytes()));
            await a.CommitAsync();
            await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);
            time.Advance(delay);
            await events.WaitForCountAsync(DeliveryBackoff, k, guard.Token);
            delay *= 2;
        }

        Assert.Equal(3, destinations.Attempts("b"));
        Assert.Equal(1, a.PendingOutCount);
        Assert.Equal(new DarqDeliveryLane("b", false, 3, time.GetUtcNow() + TimeSpan.FromMinutes(4)), Assert.Single(a.DeliveryLanes, l => l.Destination == "b"));
        Assert.Equal(0, b.UnconsumedCount);

        // B recovers: its next try (after the 4-minute cap) delivers its message once.
        destinations.SetFailing("b", false);
        time.Advance(delay);
        await a.WaitForDeliveredAsync(first.OutLsns[0], guard.Token);
        Assert.Equal(4, destinations.Attempts("b"));
        Assert.Equal(["b1"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
        Assert.Equal(["c1", "c2", "c3"], (await c.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
        Assert.Equal(3, destinations.Attempts("c"));
    }

    [Fact]
    public async Task Deliver_GeneralSpeculationOneDestinationBlocked_OthersAreDeliveredSpeculatively()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var destinations = new LaneDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("b", 2, coordinator));
        await using var c = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("c", 3, coordinator));
        destinations.Registry.Add(b);
        destinations.Registry.Add(c);
        var release = destinations.Block("b");
        await using var a = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator, destinations));
        var cProcessor = await c.RegisterProcessorAsync();
        var processor = await a.RegisterProcessorAsync();
        var step = await processor.StepAsync(new DarqStep().AddOut("b", "b1".Bytes()).AddOut("c", "c1".Bytes()).AddOut("b", "b2".Bytes()));

        // Nothing committed anywhere: C receives and acknowledges speculatively while B's delivery hangs.
        await destinations.Entered("b").WaitAsync(guard.Token);
        Assert.Equal("c1", (await cProcessor.Messages.ReadAsync(guard.Token)).Text());
        await a.WaitForDeliveredAsync(step.OutLsns[1], guard.Token);
        Assert.Equal(2, a.PendingOutCount);

        release.SetResult();
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);
        await a.WaitForDeliveredAsync(step.OutLsns[2], guard.Token);
        Assert.Equal(["b1", "b2"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
        Assert.Equal(2, destinations.Attempts("b"));
    }

    [Fact]
    public async Task Deliver_MoreDestinationsThanLanes_AtMostMaxConcurrentDeliveriesAtOnceAndAllArrive()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new LaneDestinations();
        var names = new[] { "d1", "d2", "d3", "d4", "d5" };
        var targets = new List<Darq>();
        try
        {
            var release = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            foreach (string name in names)
            {
                var target = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named(name));
                targets.Add(target);
                destinations.Registry.Add(target);
                destinations.Block(name, release);
            }

            var twoInFlight = destinations.WhenInFlight(2);
            await using var a = await new DarqTestStorage().OpenAsync(o =>
            {
                DarqDeliveryTests.Source("a", destinations)(o);
                o.MaxConcurrentDeliveries = 2;
            });
            var processor = await a.RegisterProcessorAsync();
            var step = new DarqStep();
            foreach (string name in names)
            {
                step.AddOut(name, name.Bytes());
            }

            var result = await processor.StepAsync(step);
            await a.CommitAsync();

            // Two lanes deliver (and hang); the other three destinations wait for a free lane.
            await twoInFlight.WaitAsync(guard.Token);
            Assert.Equal(2, destinations.InFlight);
            Assert.Equal(2, a.DeliveryLanes.Count(l => l.Delivering));

            release.SetResult();
            foreach (long lsn in result.OutLsns)
            {
                await a.WaitForDeliveredAsync(lsn, guard.Token);
            }

            Assert.Equal(2, destinations.MaxInFlight);
            foreach (var target in targets)
            {
                Assert.Equal([target.Name], (await target.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
            }
        }
        finally
        {
            foreach (var target in targets)
            {
                await target.DisposeAsync();
            }
        }
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Deliver_ManyDestinationsRandomFailuresAndASourceCrash_EachGetsItsMessagesInOrderExactlyOnce()
    {
        const string testName = nameof(DarqDeliveryLaneTests) + "." + nameof(Deliver_ManyDestinationsRandomFailuresAndASourceCrash_EachGetsItsMessagesInOrderExactlyOnce);
        int seed = DarqSeed.Pick(output, testName);
        var random = new Random(seed);
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new LaneDestinations();
        var events = new LogCapture();
        destinations.FailRandomly(new Random(random.Next()), 0.3);
        var names = Enumerable.Range(1, 6).Select(i => $"d{i}").ToArray();
        var targets = new List<Darq>();
        var expected = names.ToDictionary(n => n, _ => new List<string>());
        var lsns = new List<long>();
        try
        {
            foreach (string name in names)
            {
                var target = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named(name));
                targets.Add(target);
                destinations.Registry.Add(target);
            }

            // Fewer lanes than destinations, small batches, quick retries: lanes start, fail, back off and hand over.
            Action<DarqOptions> source = o =>
            {
                DarqDeliveryTests.Source("a", destinations)(o);
                o.MaxConcurrentDeliveries = 3;
                o.DeliveryBatchSize = 4;
            };
            var aStorage = new DarqTestStorage();
            var a = await aStorage.OpenAsync(source, events);
            try
            {
                var processor = await a.RegisterProcessorAsync();
                for (int i = 0; i < 40; i++)
                {
                    var step = new DarqStep();
                    for (int j = random.Next(1, 6); j > 0; j--)
                    {
                        string name = names[random.Next(names.Length)];
                        string payload = $"{name}:{expected[name].Count}";
                        expected[name].Add(payload);
                        step.AddOut(name, payload.Bytes());
                    }

                    lsns.AddRange((await processor.StepAsync(step)).OutLsns);
                    if (random.Next(4) == 0)
                    {
                        await a.CommitAsync();
                    }
                }

                // Everything committed; some of it delivered when the source crashes (its later ACK entries are lost).
                await a.CommitAsync();
                await WaitOrExplainAsync(a, lsns[random.Next(lsns.Count)], "before the crash", events, $"seed {seed}", guard.Token);
                aStorage.CrashNow();
            }
            finally
            {
                await a.DisposeAsync().AsTask().WaitAsync(guard.Token);
            }

            await using (var reopened = await aStorage.OpenAsync(source, events))
            {
                foreach (long lsn in lsns)
                {
                    await WaitOrExplainAsync(reopened, lsn, "after the crash", events, $"in flight {destinations.InFlight}; {DarqSeed.Replay(seed, testName)}", guard.Token);
                }

                Assert.Equal(0, reopened.PendingOutCount);
            }

            foreach (var target in targets)
            {
                var received = (await target.RegisterProcessorAsync()).Drain().Select(m => m.Text()).ToList();
                Assert.True(expected[target.Name].SequenceEqual(received),
                    $"{target.Name} received [{string.Join(", ", received)}], expected [{string.Join(", ", expected[target.Name])}]; {DarqSeed.Replay(seed, testName)}");
            }
        }
        finally
        {
            foreach (var target in targets)
            {
                await target.DisposeAsync();
            }
        }
    }

    /// <summary>Waits for an OUT message's delivery; on a hang, fails with the source's delivery state.</summary>
    private static async Task WaitOrExplainAsync(Darq source, long lsn, string phase, LogCapture events, string context, CancellationToken cancellationToken)
    {
        try
        {
            await source.WaitForDeliveredAsync(lsn, cancellationToken);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            var lanes = string.Join("; ", source.DeliveryLanes.Select(l => l.ToString()));
            var parked = string.Join("; ", source.ParkedDeliveries.Select(p => p.ToString()));
            Assert.Fail($"OUT message {lsn} not delivered {phase}: {source.PendingOutCount} pending, lanes [{lanes}], parked [{parked}], " +
                $"warnings [{string.Join(" | ", events.Entries.Where(e => e.Level >= LogLevel.Warning && e.EventId.Id != DeliveryFailed).TakeLast(20))}]; {context}");
        }
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Dispose_LaneBlockedInDelivery_EndsAndTheReopenedSourceDeliversTheMessage()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new LaneDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        destinations.Registry.Add(b);
        var release = destinations.Block("b");
        var aStorage = new DarqTestStorage();
        long lsn;
        var a = await aStorage.OpenAsync(DarqDeliveryTests.Source("a", destinations));
        try
        {
            var processor = await a.RegisterProcessorAsync();
            lsn = (await processor.StepAsync(new DarqStep().AddOut("b", "b1".Bytes()))).OutLsns[0];
            await a.CommitAsync();
            await destinations.Entered("b").WaitAsync(guard.Token);
        }
        finally
        {
            // Closing cancels the hanging delivery: no lane is left running, and closing does not hang.
            await a.DisposeAsync().AsTask().WaitAsync(guard.Token);
        }

        release.SetResult();
        await using var reopened = await aStorage.OpenAsync(DarqDeliveryTests.Source("a", destinations));
        Assert.Equal(1, reopened.PendingOutCount);
        await reopened.WaitForDeliveredAsync(lsn, guard.Token);
        Assert.Equal(["b1"], (await b.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Theory]
    [InlineData(0)]
    [InlineData(-1)]
    [InlineData(DarqOptions.MaxConcurrentDeliveriesLimit + 1)]
    public async Task Open_MaxConcurrentDeliveriesOutOfRange_IsRefusedNamingItAndChangesNothing(int value)
    {
        var storage = new DarqTestStorage();
        var refused = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => storage.OpenAsync(o => o.MaxConcurrentDeliveries = value));
        Assert.Equal(nameof(DarqOptions.MaxConcurrentDeliveries), refused.ParamName);
        Assert.Contains("MaxConcurrentDeliveries", refused.Message, StringComparison.Ordinal);

        // Nothing was written: the storage opens as new.
        await using var darq = await storage.OpenAsync(o => o.MaxConcurrentDeliveries = DarqOptions.MaxConcurrentDeliveriesLimit);
        Assert.Equal(0, darq.UnconsumedCount);
        Assert.Equal(0, darq.PendingOutCount);
        Assert.Empty(darq.DeliveryLanes);
    }

    /// <summary>
    /// A registry of DARQs whose deliveries the test controls per destination: held on a gate, failing transiently, and
    /// counted (attempts per destination, deliveries in flight).
    /// </summary>
    private sealed class LaneDestinations : IDarqDestinations
    {
        private readonly Lock _lock = new();
        private readonly Dictionary<string, TaskCompletionSource> _gates = new(StringComparer.Ordinal);
        private readonly Dictionary<string, TaskCompletionSource> _entered = new(StringComparer.Ordinal);
        private readonly Dictionary<string, int> _attempts = new(StringComparer.Ordinal);
        private readonly HashSet<string> _failing = new(StringComparer.Ordinal);
        private int _inFlight;
        private int _maxInFlight;
        private (int Count, TaskCompletionSource Reached)? _inFlightWaiter;
        private Random? _random;
        private double _failureRate;

        public DarqDestinationRegistry Registry { get; } = new();

        public int InFlight
        {
            get
            {
                lock (_lock)
                {
                    return _inFlight;
                }
            }
        }

        public int MaxInFlight
        {
            get
            {
                lock (_lock)
                {
                    return _maxInFlight;
                }
            }
        }

        /// <summary>Deliveries to <paramref name="name"/> wait (honouring cancellation) until the returned source is completed.</summary>
        public TaskCompletionSource Block(string name, TaskCompletionSource? gate = null)
        {
            gate ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            lock (_lock)
            {
                _gates[name] = gate;
            }

            return gate;
        }

        /// <summary>Completes once a delivery to <paramref name="name"/> has started.</summary>
        public Task Entered(string name)
        {
            lock (_lock)
            {
                return EnteredSource(name).Task;
            }
        }

        /// <summary>Completes once <paramref name="count"/> deliveries are in flight at the same time.</summary>
        public Task WhenInFlight(int count)
        {
            lock (_lock)
            {
                var reached = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                _inFlightWaiter = (count, reached);
                return reached.Task;
            }
        }

        /// <summary>While set, deliveries to <paramref name="name"/> fail with an <see cref="IOException"/> (transient).</summary>
        public void SetFailing(string name, bool failing)
        {
            lock (_lock)
            {
                if (failing)
                {
                    _failing.Add(name);
                }
                else
                {
                    _failing.Remove(name);
                }
            }
        }

        /// <summary>From now on each delivery fails (transiently) with probability <paramref name="rate"/>, drawn from <paramref name="random"/>.</summary>
        public void FailRandomly(Random random, double rate)
        {
            lock (_lock)
            {
                (_random, _failureRate) = (random, rate);
            }
        }

        public int Attempts(string name)
        {
            lock (_lock)
            {
                return _attempts.GetValueOrDefault(name);
            }
        }

        public IDarqDestination? Resolve(string name)
        {
            var inner = Registry.Resolve(name);
            return inner is null ? null : new Controlled(this, name, inner);
        }

        private TaskCompletionSource EnteredSource(string name)
        {
            if (!_entered.TryGetValue(name, out var entered))
            {
                entered = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                _entered[name] = entered;
            }

            return entered;
        }

        private sealed class Controlled(LaneDestinations owner, string name, IDarqDestination inner) : IDarqDestination
        {
            public bool ReceivesSpeculatively => inner.ReceivesSpeculatively;

            public ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken)
                => ControlAsync(() => inner.DeliverAsync(delivery, cancellationToken), cancellationToken);

            public async ValueTask<ReadOnlyMemory<byte>> DeliverSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken)
            {
                var reply = ReadOnlyMemory<byte>.Empty;
                await ControlAsync(async () => reply = await inner.DeliverSpeculativeAsync(delivery, cancellationToken), cancellationToken);
                return reply;
            }

            private async ValueTask ControlAsync(Func<ValueTask> deliver, CancellationToken cancellationToken)
            {
                Task gate;
                bool failing;
                lock (owner._lock)
                {
                    owner._attempts[name] = owner._attempts.GetValueOrDefault(name) + 1;
                    owner._inFlight++;
                    owner._maxInFlight = Math.Max(owner._maxInFlight, owner._inFlight);
                    if (owner._inFlightWaiter is { } waiter && owner._inFlight >= waiter.Count)
                    {
                        waiter.Reached.TrySetResult();
                    }

                    owner.EnteredSource(name).TrySetResult();
                    gate = owner._gates.TryGetValue(name, out var held) ? held.Task : Task.CompletedTask;
                    failing = owner._failing.Contains(name) || (owner._random is { } random && random.NextDouble() < owner._failureRate);
                }

                try
                {
                    await gate.WaitAsync(cancellationToken);
                    if (failing)
                    {
                        throw new IOException($"'{name}' is down");
                    }

                    await deliver();
                }
                finally
                {
                    lock (owner._lock)
                    {
                        owner._inFlight--;
                    }
                }
            }
        }
    }
}
