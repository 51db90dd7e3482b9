using System.Globalization;
using System.Text;

namespace Dse.Darq.Tests;

/// <summary>
/// Pending OUT payloads beyond <see cref="DarqOptions.MaxBufferedOutBytes"/>: while a destination does not acknowledge,
/// the sender keeps at most the budget of payloads in memory, the rest waits in the log only, and every message still
/// arrives once, in order, with its payload intact.
/// </summary>
public sealed class DarqOutBacklogTests
{
    private const int PayloadSize = 1000;
    private const long Budget = 8 * PayloadSize;

    /// <summary>A guard against a hang, not a timing assertion: every wait here ends on an event.</summary>
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    private static Action<DarqOptions> Source(IDarqDestinations? destinations, long budget) => o =>
    {
        o.Name = "a";
        o.Destinations = destinations;
        o.DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(1);
        o.DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(5);
        o.ParkedDeliveryRetryInterval = Timeout.InfiniteTimeSpan;
        o.MaxBufferedOutBytes = budget;
    };

    /// <summary>A 1,000-byte payload that says which message it is.</summary>
    private static ReadOnlyMemory<byte> Payload(int index) =>
        Encoding.UTF8.GetBytes(index.ToString("D6", CultureInfo.InvariantCulture).PadRight(PayloadSize, (char)('a' + (index % 26))));

    private static int Index(DarqMessage message)
    {
        var text = message.Text();
        int index = int.Parse(text.AsSpan(0, 6), CultureInfo.InvariantCulture);
        Assert.Equal(Payload(index).ToArray(), message.Payload.ToArray());
        return index;
    }

    /// <summary>Steps <paramref name="count"/> OUT messages to "b" (one per step) and commits; returns their LSNs.</summary>
    private static async Task<long[]> SendAsync(Darq darq, int count)
    {
        var processor = await darq.RegisterProcessorAsync();
        var lsns = new long[count];
        for (int i = 0; i < count; i++)
        {
            lsns[i] = (await processor.StepAsync(new DarqStep().AddOut("b", Payload(i)))).OutLsns[0];
        }

        await darq.CommitAsync();
        return lsns;
    }

    [Theory]
    [InlineData(Budget)]
    [InlineData(0L)]
    public async Task Deliver_DestinationHeldBeyondTheBudget_KeepsTheRestInTheLogAndDeliversEveryMessageInOrder(long budget)
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        destinations.Registry.Add(b);
        await using var a = await new DarqTestStorage().OpenAsync(Source(destinations, budget));

        // The destination takes nothing while the sender steps 300 messages: at most the budget stays in memory.
        await destinations.Gate.WaitAsync(guard.Token);
        long[] lsns;
        try
        {
            lsns = await SendAsync(a, 300);
            Assert.Equal(300, a.PendingOutCount);
            Assert.Equal(budget, a.BufferedOutBytes);
            Assert.Equal((int)(300 - (budget / PayloadSize)), a.SpilledOutCount);
        }
        finally
        {
            destinations.Gate.Release();
        }

        await a.WaitForDeliveredAsync(lsns[^1], guard.Token);
        Assert.Equal(0, a.PendingOutCount);
        Assert.Equal(0, a.BufferedOutBytes);
        Assert.Equal(0, a.SpilledOutCount);
        Assert.Equal(Enumerable.Range(0, 300), (await b.RegisterProcessorAsync()).Drain().Select(Index));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Reopen_PendingOutBeyondTheBudget_KeepsOnlyTheBudgetInMemoryAndDeliversEveryMessage()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var storage = new DarqTestStorage();
        long[] lsns;
        await using (var first = await storage.OpenAsync(Source(destinations: null, Budget)))
        {
            // No destinations: nothing in this instance sends, so no payload is kept at all.
            lsns = await SendAsync(first, 300);
            Assert.Equal(0, first.BufferedOutBytes);
            Assert.Equal(300, first.SpilledOutCount);
        }

        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        destinations.Registry.Add(b);
        await destinations.Gate.WaitAsync(guard.Token);
        await using var a = await storage.OpenAsync(Source(destinations, Budget));
        try
        {
            Assert.Equal(300, a.PendingOutCount);
            Assert.Equal(Budget, a.BufferedOutBytes);
            Assert.Equal(292, a.SpilledOutCount);
        }
        finally
        {
            destinations.Gate.Release();
        }

        await a.WaitForDeliveredAsync(lsns[^1], guard.Token);
        Assert.Equal((0, 0L, 0), (a.PendingOutCount, a.BufferedOutBytes, a.SpilledOutCount));
        Assert.Equal(Enumerable.Range(0, 300), (await b.RegisterProcessorAsync()).Drain().Select(Index));
    }

    /// <param name="offset">
    /// Where in the entry the damage is: 64 is inside the payload (the DARQ entry's checksum fails); 3 is the top byte of
    /// FasterLog's own length header (FasterLog's read returns nothing, a failed read, which parks after 8 in a row).
    /// </param>
    [Theory]
    [InlineData(64)]
    [InlineData(3)]
    public async Task Deliver_SpilledEntryDamagedOnStorage_ParksTheDestinationThereAndDiscardLetsTheRestThrough(int offset)
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(DarqDeliveryTests.Named("b"));
        destinations.Registry.Add(b);
        var storage = new DarqTestStorage();
        await using var a = await storage.OpenAsync(Source(destinations, budget: 0));

        // 600 KB of OUT messages, over twice the log's memory, all spilled; one payload is damaged on storage. (The
        // delivery loop may already have read the first run of 64 when the commit woke it: the damage is further on.)
        await destinations.Gate.WaitAsync(guard.Token);
        long[] lsns;
        try
        {
            lsns = await SendAsync(a, 600);
            storage.CorruptLog(lsns[100] + offset);
        }
        finally
        {
            destinations.Gate.Release();
        }

        // The messages before it arrive; the destination is parked at it, with a reason naming it; nothing is lost.
        var refused = await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => a.WaitForDeliveredAsync(lsns[100], guard.Token).AsTask());
        Assert.Contains(offset == 3 ? $"LSN {lsns[100]} could not be read back from the log 8 times in a row" : $"LSN {lsns[100]} is damaged in the log",
            refused.Reason, StringComparison.Ordinal);
        await a.WaitForDeliveredAsync(lsns[99], guard.Token);
        var parked = Assert.Single(a.ParkedDeliveries);
        Assert.Equal(("b", lsns[100]), (parked.Destination, parked.Lsn));
        Assert.Equal(500, a.PendingOutCount);

        // The operator gives it up: every later message flows.
        Assert.True(await a.DiscardOutAsync(lsns[100], guard.Token));
        await a.WaitForDeliveredAsync(lsns[^1], guard.Token);
        Assert.Empty(a.ParkedDeliveries);
        Assert.Equal((0, 0), (a.PendingOutCount, a.SpilledOutCount));
        Assert.Equal(Enumerable.Range(0, 600).Where(i => i != 100), (await b.RegisterProcessorAsync()).Drain().Select(Index));
    }

    [Fact]
    public async Task DeliveryPass_LargeBacklogs_CollectsTheCommittedHeadOfEachDestinationOldestFirst()
    {
        // No delivery loop runs (no destinations), so the pass sees exactly what the test stepped. A pass takes at most
        // 256 messages per destination (4 batches of the default 64): a backlog of thousands is not copied on every pass.
        await using var darq = await new DarqTestStorage().OpenAsync(o =>
        {
            o.Name = "a";
            o.CommitInterval = Timeout.InfiniteTimeSpan;
        });
        var processor = await darq.RegisterProcessorAsync();
        var toB = new List<long>();
        var toC = new List<long>();
        for (int i = 0; i < 1000; i++)
        {
            var step = new DarqStep().AddOut("b", "b".Bytes());
            if (i % 400 == 5)
            {
                step.AddOut("c", "c".Bytes());
            }

            var result = await processor.StepAsync(step);
            toB.Add(result.OutLsns[0]);
            toC.AddRange(result.OutLsns.Skip(1));
        }

        // Nothing is committed: nothing may leave.
        Assert.Empty(await darq.CollectDeliverableForTestAsync());

        // The discard commits (it returns once durable); the message stepped after it is not committed.
        await darq.CommitAsync();
        Assert.True(await darq.DiscardOutAsync(toB[1]));
        var uncommitted = (await processor.StepAsync(new DarqStep().AddOut("c", "late".Bytes()))).OutLsns[0];

        var collected = await darq.CollectDeliverableForTestAsync();

        // B's oldest message is older than C's: B's head first, 256 of them in LSN order (the discarded one skipped), then
        // all three of C's committed ones, not the one stepped after the commit.
        Assert.Equal([.. toB.Where(l => l != toB[1]).Take(256), .. toC], collected.Select(c => c.Lsn));
        Assert.All(collected.Take(256), c => Assert.Equal("b", c.Destination));
        Assert.All(collected.Skip(256), c => Assert.Equal("c", c.Destination));
        Assert.DoesNotContain(uncommitted, collected.Select(c => c.Lsn));
        Assert.Equal(1000 - 1 + 3 + 1, darq.PendingOutCount);
    }

    [Fact]
    public async Task Open_NegativeOutBudget_IsRefused()
    {
        var error = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => new DarqTestStorage().OpenAsync(o => o.MaxBufferedOutBytes = -1));
        Assert.Equal(nameof(DarqOptions.MaxBufferedOutBytes), error.ParamName);
    }
}
