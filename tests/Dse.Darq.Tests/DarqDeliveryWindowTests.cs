using System.Globalization;
using Xunit.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>
/// Pipelined OUT delivery (<see cref="DarqOptions.DeliveryWindow"/>): several batches appended at the destination ahead
/// of its commit, each acknowledged only once durable there, never more than the window in flight, and every message
/// arriving once and in order across failures before and after an append and a destination crash with a full window.
/// </summary>
[Trait("Category", "Recovery")]
public sealed class DarqDeliveryWindowTests(ITestOutputHelper output)
{
    /// <summary>A guard against a hang, not a timing assertion: every wait here ends on an event.</summary>
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Deliver_FullWindow_AppendsAheadOfTheCommitAndAcknowledgesOnlyOnceDurable()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var registry = new DarqDestinationRegistry();

        // The destination commits only when the test says so.
        await using var b = await new DarqTestStorage().OpenAsync(o =>
        {
            o.Name = "b";
            o.CommitInterval = TimeSpan.FromHours(1);
        });
        registry.Add(b);
        var counting = new CountingDestinations(registry);
        await using var a = await new DarqTestStorage().OpenAsync(Window("a", counting, batch: 4, window: 3));
        var processor = await a.RegisterProcessorAsync(guard.Token);
        long last = -1;
        for (int i = 0; i < 40; i++)
        {
            last = (await processor.StepAsync(new DarqStep().AddOut("b", Text(i).Bytes()), guard.Token)).OutLsns[0];
        }

        await a.CommitAsync(guard.Token);

        // Three batches of four are appended at B before B commits anything; none is acknowledged yet.
        var bProcessor = await b.RegisterProcessorAsync(guard.Token);
        var received = new List<string>();
        await ReadAsync(bProcessor, received, 12, guard.Token);
        Assert.Equal(40, a.PendingOutCount);
        Assert.Equal(3, counting.MaxInFlight);

        // Each commit of B acknowledges what is in flight and lets the next batches go: never more than three at once.
        while (received.Count < 40)
        {
            await b.CommitAsync(guard.Token);
            await ReadAsync(bProcessor, received, Math.Min(12, 40 - received.Count), guard.Token);
        }

        await b.CommitAsync(guard.Token);
        await a.WaitForDeliveredAsync(last, guard.Token);
        Assert.Equal(0, a.PendingOutCount);
        Assert.Equal(Enumerable.Range(0, 40).Select(Text), received);
        Assert.Equal(3, counting.MaxInFlight);
    }

    [Fact]
    public async Task Deliver_DestinationCrashesWithAFullWindowInFlight_EachMessageArrivesOnceInOrder()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var registry = new DarqDestinationRegistry();
        var bStorage = new DarqTestStorage();
        await using var a = await new DarqTestStorage().OpenAsync(Window("a", registry, batch: 4, window: 3));
        var processor = await a.RegisterProcessorAsync(guard.Token);
        long last = -1;
        for (int i = 0; i < 40; i++)
        {
            last = (await processor.StepAsync(new DarqStep().AddOut("b", Text(i).Bytes()), guard.Token)).OutLsns[0];
        }

        await a.CommitAsync(guard.Token);
        var b = await bStorage.OpenAsync(o =>
        {
            o.Name = "b";
            o.CommitInterval = TimeSpan.FromHours(1);
        });
        registry.Add(b);

        // A full window is appended at B, none of it committed; then B's storage fails and B goes away with it.
        var lost = new List<string>();
        await ReadAsync(await b.RegisterProcessorAsync(guard.Token), lost, 12, guard.Token);
        Assert.Equal(40, a.PendingOutCount);
        bStorage.CommitFaults!.FailPermanently();
        bStorage.LogFaults!.FailPermanently();
        await b.DisposeAsync();

        // B restarts on what its storage holds (nothing of the window): A sends everything again, once, in order.
        await using var b2 = await bStorage.OpenAsync(o =>
        {
            o.Name = "b";
            o.CommitInterval = TimeSpan.FromMilliseconds(5);
        });
        Assert.Equal(0, b2.UnconsumedCount);
        registry.Add(b2);
        await a.WaitForDeliveredAsync(last, guard.Token);
        Assert.Equal(0, a.PendingOutCount);
        Assert.Equal(Enumerable.Range(0, 40).Select(Text), (await b2.RegisterProcessorAsync(guard.Token)).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Deliver_SeededFailuresBeforeAndAfterAppends_EachMessageArrivesOnceInOrder()
    {
        int seed = DarqSeed.Pick(output, nameof(Deliver_SeededFailuresBeforeAndAfterAppends_EachMessageArrivesOnceInOrder));
        string replay = DarqSeed.Replay(seed, nameof(Deliver_SeededFailuresBeforeAndAfterAppends_EachMessageArrivesOnceInOrder));
        using var guard = new CancellationTokenSource(HangGuard);
        var registry = new DarqDestinationRegistry();
        await using var b = await new DarqTestStorage().OpenAsync(o =>
        {
            o.Name = "b";
            o.CommitInterval = TimeSpan.FromMilliseconds(2);
        });
        registry.Add(b);
        var flaky = new FlakyDestinations(registry, new Random(seed));
        await using var a = await new DarqTestStorage().OpenAsync(Window("a", flaky, batch: 8, window: 4));
        var processor = await a.RegisterProcessorAsync(guard.Token);
        const int Count = 400;
        long last = -1;
        for (int i = 0; i < Count; i++)
        {
            last = (await processor.StepAsync(new DarqStep().AddOut("b", Text(i).Bytes()), guard.Token)).OutLsns[0];
            if (i % 50 == 49)
            {
                await a.CommitAsync(guard.Token);
            }
        }

        await a.CommitAsync(guard.Token);
        await a.WaitForDeliveredAsync(last, guard.Token);
        await b.CommitAsync(guard.Token);
        var received = (await b.RegisterProcessorAsync(guard.Token)).Drain().Select(m => m.Text()).ToList();
        output.WriteLine($"failures before an append {flaky.FailedBefore}, after an append {flaky.FailedAfter}, of durability {flaky.FailedDurability}");
        Assert.True(Enumerable.Range(0, Count).Select(Text).SequenceEqual(received),
            $"B received {received.Count} messages, not 0..{Count - 1} once each in order; {replay}");
        Assert.True(flaky.FailedBefore + flaky.FailedAfter + flaky.FailedDurability > 0, $"no failure was injected; {replay}");
    }

    private static Action<DarqOptions> Window(string name, IDarqDestinations destinations, int batch, int window) => o =>
    {
        o.Name = name;
        o.Destinations = destinations;
        o.DeliveryBatchSize = batch;
        o.DeliveryWindow = window;
        o.DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(1);
        o.DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(5);
    };

    private static string Text(int value) => value.ToString(CultureInfo.InvariantCulture);

    /// <summary>Reads <paramref name="count"/> more messages from the processor's stream (they were appended there).</summary>
    private static async Task ReadAsync(DarqProcessor processor, List<string> into, int count, CancellationToken cancellationToken)
    {
        for (int i = 0; i < count; i++)
        {
            into.Add((await processor.Messages.ReadAsync(cancellationToken)).Text());
        }
    }

    /// <summary>The registry's destinations, each behind one lasting wrapper per name that <see cref="Wrap"/> makes.</summary>
    private abstract class WrappedDestinations(IDarqDestinations inner) : IDarqDestinations
    {
        private readonly Dictionary<string, IDarqDestination> _wrapped = [];

        public IDarqDestination? Resolve(string name)
        {
            lock (_wrapped)
            {
                if (inner.Resolve(name) is not { } destination)
                {
                    return null;
                }

                if (!_wrapped.TryGetValue(name, out var wrapped))
                {
                    _wrapped[name] = wrapped = Wrap(destination);
                }

                return wrapped;
            }
        }

        protected abstract IDarqDestination Wrap(IDarqDestination destination);
    }

    /// <summary>The registry's destinations behind wrappers that count the batches appended and not yet durable.</summary>
    private sealed class CountingDestinations(IDarqDestinations inner) : WrappedDestinations(inner)
    {
        private int _inFlight;
        private int _maxInFlight;

        public int MaxInFlight => Volatile.Read(ref _maxInFlight);

        protected override IDarqDestination Wrap(IDarqDestination destination) => new Counting(this, destination);

        private void Sent()
        {
            int now = Interlocked.Increment(ref _inFlight);
            int max;
            while (now > (max = Volatile.Read(ref _maxInFlight)) && Interlocked.CompareExchange(ref _maxInFlight, now, max) != max)
            {
            }
        }

        private sealed class Counting(CountingDestinations owner, IDarqDestination inner) : IDarqDestination
        {
            public ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken) => inner.DeliverAsync(delivery, cancellationToken);

            public async ValueTask<DarqSentBatch> SendBatchAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
            {
                var sent = await inner.SendBatchAsync(deliveries, cancellationToken);
                owner.Sent();
                return new DarqSentBatch(async token =>
                {
                    try
                    {
                        await sent.WaitDurableAsync(token);
                    }
                    finally
                    {
                        Interlocked.Decrement(ref owner._inFlight);
                    }
                });
            }
        }
    }

    /// <summary>
    /// The registry's destinations behind stable wrappers that fail at seeded points: before a batch is appended (nothing
    /// arrives), after it was appended (the source does not learn it arrived), and in the wait for its durability.
    /// </summary>
    private sealed class FlakyDestinations(IDarqDestinations inner, Random random) : WrappedDestinations(inner)
    {
        private int _failedBefore;
        private int _failedAfter;
        private int _failedDurability;

        public int FailedBefore => Volatile.Read(ref _failedBefore);

        public int FailedAfter => Volatile.Read(ref _failedAfter);

        public int FailedDurability => Volatile.Read(ref _failedDurability);

        protected override IDarqDestination Wrap(IDarqDestination destination) => new Flaky(this, destination);

        /// <summary>0 to 99, drawn under a lock (one lane calls at a time, but the durability waits run on their own).</summary>
        private int Draw()
        {
            lock (random)
            {
                return random.Next(100);
            }
        }

        private sealed class Flaky(FlakyDestinations owner, IDarqDestination inner) : IDarqDestination
        {
            public ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken) => inner.DeliverAsync(delivery, cancellationToken);

            public async ValueTask<DarqSentBatch> SendBatchAsync(IReadOnlyList<DarqDelivery> deliveries, CancellationToken cancellationToken)
            {
                if (owner.Draw() < 4)
                {
                    Interlocked.Increment(ref owner._failedBefore);
                    throw new IOException("injected: the batch never reached the destination");
                }

                var sent = await inner.SendBatchAsync(deliveries, cancellationToken);
                if (owner.Draw() < 4)
                {
                    // Appended, but the source never hears of it (the reply was lost): the resend is deduplicated.
                    Interlocked.Increment(ref owner._failedAfter);
                    throw new IOException("injected: the reply to an appended batch was lost");
                }

                bool failDurability = owner.Draw() < 4;
                return new DarqSentBatch(async token =>
                {
                    await sent.WaitDurableAsync(token);
                    if (failDurability)
                    {
                        Interlocked.Increment(ref owner._failedDurability);
                        throw new IOException("injected: the durability of an appended batch is unknown");
                    }
                });
            }
        }
    }
}
