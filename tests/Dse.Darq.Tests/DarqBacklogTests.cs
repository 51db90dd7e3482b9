using System.Globalization;
using System.Text;
using System.Threading.Channels;
using Dse.Storage;
using Dse.Testing;
using Microsoft.Extensions.Time.Testing;

namespace Dse.Darq.Tests;

/// <summary>
/// The IN backlog beyond <see cref="DarqOptions.MaxBufferedInBytes"/>: spilled messages keep only their place in memory
/// and reach the processor from the log, in LSN order, with their payloads intact, while the memory held stays bounded.
/// </summary>
public sealed class DarqBacklogTests
{
    private const int PayloadSize = 1024;
    private const long Budget = 8 * PayloadSize;

    /// <summary>How long a read may wait for the feed loop before the test fails instead of hanging.</summary>
    private static readonly TimeSpan ReadLimit = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Register_BacklogBeyondBudget_ReplaysEveryMessageInOrderFromTheLog()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o => o.MaxBufferedInBytes = Budget);
        var lsns = await EnqueueAsync(darq, 0, 300);
        await darq.CommitAsync();

        // Eight payloads fit the budget; the other 292 wait in the log only.
        Assert.Equal(Budget, darq.BufferedInBytes);
        Assert.Equal(292, darq.SpilledInCount);

        var processor = await darq.RegisterProcessorAsync();
        await StepAllAsync(darq, processor, lsns, 0, isReplay: true);
        Assert.Equal(0, darq.UnconsumedCount);
        Assert.Equal(0, darq.SpilledInCount);
        Assert.Equal(0, darq.BufferedInBytes);
    }

    [Theory]
    [InlineData(DarqSpeculationMode.IntraParticipant)]
    [InlineData(DarqSpeculationMode.Off)]
    public async Task Enqueue_ProcessorFallsBehind_LiveMessagesSpillAndArriveInOrder(DarqSpeculationMode mode)
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o =>
        {
            o.MaxBufferedInBytes = Budget;
            o.Speculation = mode;
        });
        var processor = await darq.RegisterProcessorAsync();

        // The processor reads nothing while 200 messages arrive: the first eight are handed over, the rest spill.
        var lsns = await EnqueueAsync(darq, 0, 200);
        Assert.Equal(192, darq.SpilledInCount);
        await darq.CommitAsync();
        await StepAllAsync(darq, processor, lsns, 0, isReplay: false);

        // Caught up, it gets live messages straight from the enqueue again.
        var more = await EnqueueAsync(darq, 200, 3);
        Assert.Equal(0, darq.SpilledInCount);
        await darq.CommitAsync();
        await StepAllAsync(darq, processor, more, 200, isReplay: false);
    }

    [Fact]
    public async Task ReadEverything_SpeculationOffMessagesWaitForTheirCommit_NotUntilReleasedAndRead()
    {
        // The feed gives a processor that read everything room beyond the budget (it may hold what it read unconsumed and
        // wait for more). Messages held for their commit are not read: counting them as read let the feed buffer half a
        // budget more whenever it ran between a commit and the release of what that commit covered.
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o =>
        {
            o.MaxBufferedInBytes = Budget;
            o.Speculation = DarqSpeculationMode.Off;
        });
        var processor = await darq.RegisterProcessorAsync();
        Assert.True(processor.ReadEverything);

        var lsns = await EnqueueAsync(darq, 0, 3);
        Assert.Equal(0, processor.Unread);
        Assert.False(processor.ReadEverything, "three messages wait for their commit");

        await darq.CommitAsync();
        Assert.Equal(3, processor.Unread);
        Assert.False(processor.ReadEverything);

        for (int i = 0; i < lsns.Count; i++)
        {
            Assert.Equal(lsns[i], (await ReadAsync(processor)).Lsn);
        }

        Assert.True(processor.ReadEverything);
    }

    [Fact]
    public async Task Feed_NoBackgroundCommitAndNobodyCommits_CommitsTheSpilledMessagesItself()
    {
        // DarqTestStorage turns the background commit off; nothing below commits.
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o => o.MaxBufferedInBytes = Budget);
        var processor = await darq.RegisterProcessorAsync();
        var lsns = await EnqueueAsync(darq, 0, 40);
        Assert.True(darq.CommittedUntilAddress <= lsns[8], "the spilled messages were committed before the feed loop needed them");

        await StepAllAsync(darq, processor, lsns, 0, isReplay: false);
        Assert.True(darq.CommittedUntilAddress > lsns[^1], "the feed loop did not commit");
    }

    [Fact]
    public async Task Feed_NoGroupCommitProcessorReadsItsLastMessageAfterThePass_GetsTheNextSpilledOne()
    {
        // DarqTestStorage turns the background commit off, so no commit wakes the feed loop once the test stops acting. With
        // a budget of 0 every message spills and the loop hands them over one at a time. The processor reads its message
        // only after the loop's pass found it unread; it keeps every message unconsumed, waiting for the next one: the read
        // itself must wake the loop, or the processor waits for ever.
        using var guard = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o => o.MaxBufferedInBytes = 0);
        var lsns = await EnqueueAsync(darq, 0, 3);
        await darq.CommitAsync();
        Assert.Equal(3, darq.SpilledInCount);

        // The loop stops after the passes of each wake-up until the test lets it go on.
        var feed = darq.InFeedForTest;
        var betweenPasses = Channel.CreateUnbounded<bool>();
        using var resume = new SemaphoreSlim(0);
        feed.AfterPassesForTest = async () =>
        {
            betweenPasses.Writer.TryWrite(true);
            await resume.WaitAsync(guard.Token);
        };
        var processor = await darq.RegisterProcessorAsync(guard.Token);

        // Registration's wake-ups (its own and its commit's) were all sent; the loop runs passes until none is pending.
        await betweenPasses.Reader.ReadAsync(guard.Token);
        while (feed.WakeUpPendingForTest)
        {
            resume.Release();
            await betweenPasses.Reader.ReadAsync(guard.Token);
        }

        // The last pass handed over the first message and found it unread: the processor had something to work on.
        Assert.Equal(1, processor.Unread);
        Assert.Equal(2, darq.SpilledInCount);
        Assert.Equal(lsns[0], (await processor.Messages.ReadAsync(guard.Token)).Lsn);
        feed.AfterPassesForTest = null;
        resume.Release();

        var held = new List<DarqMessage>();
        for (int i = 1; i < lsns.Count; i++)
        {
            try
            {
                held.Add(await processor.Messages.ReadAsync(guard.Token));
            }
            catch (OperationCanceledException) when (guard.IsCancellationRequested)
            {
                Assert.Fail($"message {i} never reached the processor that read everything it was handed ({darq.SpilledInCount} spilled)");
            }

            Assert.Equal(lsns[i], held[^1].Lsn);
            Assert.True(Payload(i).Span.SequenceEqual(held[^1].Payload.Span), $"message {i}: payload differs");
        }

        Assert.Equal(0, darq.SpilledInCount);
        await processor.ConsumeAsync(lsns[0], guard.Token);
        foreach (var message in held)
        {
            await processor.ConsumeAsync(message.Lsn, guard.Token);
        }

        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task OpenAsync_BacklogBeyondBudget_RecoversWithBoundedMemoryAndReplaysAll()
    {
        var storage = new DarqTestStorage();
        IReadOnlyList<long> lsns;
        await using (var first = await storage.OpenAsync(o => o.MaxBufferedInBytes = long.MaxValue))
        {
            lsns = await EnqueueAsync(first, 0, 300);
            Assert.Equal(300L * PayloadSize, first.BufferedInBytes);
            await first.CommitAsync();
        }

        await using var darq = await storage.OpenAsync(o => o.MaxBufferedInBytes = Budget);
        Assert.Equal(Budget, darq.BufferedInBytes);
        Assert.Equal(292, darq.SpilledInCount);
        var processor = await darq.RegisterProcessorAsync();
        await StepAllAsync(darq, processor, lsns, 0, isReplay: true);
    }

    [Fact]
    public async Task OpenAsync_NoBudget_EveryMessageIsReadBackOneAtATime()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o => o.MaxBufferedInBytes = 0);
        var lsns = await EnqueueAsync(darq, 0, 20);
        Assert.Equal(20, darq.SpilledInCount);
        await darq.CommitAsync();
        var processor = await darq.RegisterProcessorAsync();
        await StepAllAsync(darq, processor, lsns, 0, isReplay: true, budget: 0);
    }

    [Fact]
    public async Task Step_ConsumesSpilledMessageNotYetHandedOver_FeedSkipsIt()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o => o.MaxBufferedInBytes = Budget);
        var lsns = await EnqueueAsync(darq, 0, 50);
        await darq.CommitAsync();
        var processor = await darq.RegisterProcessorAsync();

        // A processor may consume an LSN it learned elsewhere before reading it.
        await processor.StepAsync(new DarqStep().Consume(lsns[30]));
        Assert.Equal(41, darq.SpilledInCount);

        var seen = new List<int>();
        for (int i = 0; i < 49; i++)
        {
            var message = await ReadAsync(processor);
            seen.Add(Index(message));
            await processor.StepAsync(new DarqStep().Consume(message));
        }

        Assert.Equal(Enumerable.Range(0, 50).Where(i => i != 30), seen);
        Assert.Equal(0, darq.UnconsumedCount);
        Assert.False(processor.Messages.TryRead(out _));
    }

    [Fact]
    public async Task Feed_SpilledEntryDamagedOnStorage_StreamEndsWithErrorNamingTheAddressAndNothingIsConsumed()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o => o.MaxBufferedInBytes = 4 * PayloadSize);

        // Ten pages of messages: the log keeps four in memory, so the first ones are read back from the device.
        var lsns = await EnqueueAsync(darq, 0, 600);
        await darq.CommitAsync();
        storage.CorruptLog(lsns[10] + 64);

        var processor = await darq.RegisterProcessorAsync();
        for (int i = 0; i < 10; i++)
        {
            var message = await ReadAsync(processor);
            Assert.Equal(i, Index(message));
            await processor.StepAsync(new DarqStep().Consume(message));
        }

        // The stream ends with the error (ReadAsync wraps it, as for any completed channel; ReadAllAsync throws it as is).
        var closed = await Assert.ThrowsAsync<ChannelClosedException>(() => ReadAsync(processor));
        var error = Assert.IsType<InvalidDataException>(closed.InnerException);
        Assert.Contains($"corrupt at address {lsns[10]}", error.Message, StringComparison.Ordinal);
        Assert.Equal(590, darq.UnconsumedCount);
        Assert.Equal(590, darq.SpilledInCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task OpenAsync_CrashWithSpilledBacklog_ReplaysTheCommittedMessagesOnly()
    {
        var storage = new DarqTestStorage();
        IReadOnlyList<long> lsns;
        await using (var first = await storage.OpenAsync(o => o.MaxBufferedInBytes = Budget))
        {
            lsns = await EnqueueAsync(first, 0, 100);
            await first.CommitAsync();
            await EnqueueAsync(first, 100, 20);
            storage.CrashNow();
        }

        await using var darq = await storage.OpenAsync(o => o.MaxBufferedInBytes = Budget);
        Assert.Equal(100, darq.UnconsumedCount);
        Assert.Equal(92, darq.SpilledInCount);
        var processor = await darq.RegisterProcessorAsync();
        await StepAllAsync(darq, processor, lsns, 0, isReplay: true);
        Assert.False(processor.Messages.TryRead(out _));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restore_GeneralSpeculationWithSpilledBacklog_RollsBackAndFeedsWhatSurvived()
    {
        using var guard = new CancellationTokenSource(ReadLimit);
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();
        var bStorage = new DarqTestStorage();
        Action<DarqOptions> bOptions = o =>
        {
            DarqGeneralSpeculationTests.General("b", 2, coordinator)(o);
            o.MaxBufferedInBytes = 4 * PayloadSize;
        };

        await using var b = await bStorage.OpenAsync(bOptions);
        var kept = new List<long>();
        await using (var a = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator)))
        {
            // B version 1: twenty messages, most of them spilled. B version 2: one more, which depends on A's version
            // that never persists.
            for (int i = 0; i < 20; i++)
            {
                kept.Add((await b.EnqueueAsync(5, i + 1, Payload(i), guard.Token)).Lsn);
            }

            await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
            await b.DseStateObject.WaitForCommitAsync(1, 0, guard.Token);
            await a.EnqueueAsync("a".Bytes(), guard.Token);
            await a.DseStateObject!.StartLocalActionAsync(guard.Token);
            var fromA = a.DseStateObject.EndAction();
            await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", Payload(99)) { DseHeader = fromA.ToArray() }, guard.Token);
            Assert.Equal(17, b.SpilledInCount);
            await b.DseStateObject.AdvanceVersionAsync(guard.Token);
            aStorage.CrashNow();
        }

        await using var a2 = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator));
        await b.DseStateObject!.RefreshAsync(guard.Token);
        Assert.Equal(1, b.DseStateObject.WorldLine);
        Assert.Equal(20, b.UnconsumedCount);
        Assert.Equal(16, b.SpilledInCount);
        Assert.Equal(4L * PayloadSize, b.BufferedInBytes);

        var processor = await b.RegisterProcessorAsync(guard.Token);
        await StepAllAsync(b, processor, kept, 0, isReplay: true, budget: 4 * PayloadSize);
        Assert.False(processor.Messages.TryRead(out _));
    }

    [Fact]
    public async Task Feed_ChunkConsumedAndNewMessagesSpilledDuringItsRead_StreamGoesOnInOrder()
    {
        // The feed loop is stopped inside its read of a chunk (the log device holds the read), and meanwhile the processor
        // consumes every spilled message by LSN, a new message is buffered (nothing is spilled then) and handed over
        // directly, and later ones spill again. The loop must go on after the buffered one, not read it back.
        var device = new HoldingDevice(DseDevices.CreateInMemory(new InMemoryStorage()));
        var options = DarqTestStorage.Options(device, DseDevices.CreateInMemory(new InMemoryStorage()));
        options.MaxBufferedInBytes = 4 * PayloadSize;
        await using var darq = await Darq.OpenAsync(options);

        // Ten pages for a log that keeps four in memory: the chunk is read from the device.
        var lsns = await EnqueueAsync(darq, 0, 600);
        await darq.CommitAsync();
        device.HoldReads();
        var processor = await darq.RegisterProcessorAsync();
        for (int i = 0; i < 4; i++)
        {
            await processor.StepAsync(new DarqStep().Consume(lsns[i]));
        }

        await device.FirstReadHeld.WaitAsync(ReadLimit);
        for (int i = 4; i < lsns.Count; i++)
        {
            await processor.StepAsync(new DarqStep().Consume(lsns[i]));
        }

        Assert.Equal(0, darq.SpilledInCount);
        var more = await EnqueueAsync(darq, 600, 12);
        Assert.Equal(8, darq.SpilledInCount);
        await darq.CommitAsync();
        device.ReleaseReads();

        // First the four handed over at registration (consumed since), then the four buffered new ones.
        for (int i = 0; i < 4; i++)
        {
            Assert.Equal(lsns[i], (await ReadAsync(processor)).Lsn);
        }

        var held = new List<DarqMessage>();
        for (int i = 0; i < 4; i++)
        {
            held.Add(await ReadAsync(processor));
            Assert.Equal(more[i], held[^1].Lsn);
        }

        // The processor holds all it read, unconsumed: a wake-up (each commit is one) hands it the next, spilled, message
        // (not the buffered ones again).
        await darq.CommitAsync();
        var next = await ReadAsync(processor);
        Assert.Equal(more[4], next.Lsn);
        Assert.True(Payload(604).Span.SequenceEqual(next.Payload.Span), "the spilled message read back differs");
        foreach (var message in held.Append(next))
        {
            await processor.StepAsync(new DarqStep().Consume(message));
        }

        await StepAllAsync(darq, processor, more.Skip(5).ToList(), 605, isReplay: false, budget: 4 * PayloadSize);
        Assert.False(processor.Messages.TryRead(out _));
    }

    [Fact]
    public async Task OpenAsync_NegativeBudget_Refused()
    {
        var storage = new DarqTestStorage();
        var error = await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => storage.OpenAsync(o => o.MaxBufferedInBytes = -1));
        Assert.Equal(nameof(DarqOptions.MaxBufferedInBytes), error.ParamName);
    }

    [Fact]
    public async Task DisposeAsync_FeedLoopStuckInAStorageRead_ClosesAfterTheLimitAndSaysSo()
    {
        // The feed loop is stopped inside a device read that does not return (the log device holds it): closing waits
        // for it at most 30 s (of the DARQ's clock), logs event 4020 and closes anyway.
        var clock = new FakeTimeProvider();
        var logs = new LogCapture();
        var device = new HoldingDevice(DseDevices.CreateInMemory(new InMemoryStorage()));
        var options = DarqTestStorage.Options(device, DseDevices.CreateInMemory(new InMemoryStorage()));
        options.MaxBufferedInBytes = 4 * PayloadSize;
        options.TimeProvider = clock;
        var darq = await Darq.OpenAsync(options, logs);
        await EnqueueAsync(darq, 0, 600);
        await darq.CommitAsync();

        // Hold the page read (which ignores cancellation), not the length-word check before it (which honours it).
        device.HeldReadMinLength = 4096;
        device.HoldReads();
        var processor = await darq.RegisterProcessorAsync();
        for (int i = 0; i < 4; i++)
        {
            // The four buffered messages consumed: the feed loop reads the next chunk back (and is held there).
            await processor.StepAsync(new DarqStep().Consume(await ReadAsync(processor)));
        }

        await device.FirstReadHeld.WaitAsync(ReadLimit);

        var closing = darq.DisposeAsync().AsTask();
        for (int i = 0; i < 6000 && !closing.IsCompleted; i++)
        {
            // The limit's timer starts when DisposeAsync reaches the feed loop: move the clock until it has fired.
            clock.Advance(TimeSpan.FromSeconds(31));
            await Task.Delay(10);
        }

        await closing.WaitAsync(ReadLimit);
        Assert.True(logs.Contains(4020), "closing did not report the feed loop that did not stop (event 4020)");
        device.ReleaseReads();

        // The processor's stream is closed: what was handed over, then the end.
        await Assert.ThrowsAsync<ChannelClosedException>(async () =>
        {
            while (true)
            {
                await ReadAsync(processor);
            }
        });
    }

    [Fact]
    public async Task DisposeAsync_LogDeviceThatNeverCloses_ClosesAfterTheLimitAndSaysSo()
    {
        // The log device's Dispose blocks (as FASTER's local-file device does while an I/O it issued never returns):
        // closing waits for the storage at most 30 s (of the DARQ's clock), logs event 4021 and returns.
        var clock = new FakeTimeProvider();
        var logs = new LogCapture();
        var device = new HoldingDevice(DseDevices.CreateInMemory(new InMemoryStorage()));
        var options = DarqTestStorage.Options(device, DseDevices.CreateInMemory(new InMemoryStorage()));
        options.TimeProvider = clock;
        var darq = await Darq.OpenAsync(options, logs);
        await EnqueueAsync(darq, 0, 10);
        await darq.CommitAsync();
        device.HoldDispose();

        var closing = darq.DisposeAsync().AsTask();
        await device.DisposeHeld.WaitAsync(ReadLimit);
        for (int i = 0; i < 6000 && !closing.IsCompleted; i++)
        {
            // The limit's timer starts once the storage starts closing: move the clock until it has fired.
            clock.Advance(TimeSpan.FromSeconds(31));
            await Task.Delay(10);
        }

        await closing.WaitAsync(ReadLimit);
        Assert.True(logs.Contains(4021), "closing did not report the storage that did not close (event 4021)");
        Assert.False(logs.Contains(4020), "a loop did not stop");
        await Assert.ThrowsAsync<ObjectDisposedException>(() => darq.EnqueueAsync(Payload(11)).AsTask());
        device.ReleaseDispose();
    }

    /// <summary>Enqueues <paramref name="count"/> messages numbered from <paramref name="first"/>, each <see cref="PayloadSize"/> bytes; returns their LSNs.</summary>
    private static async Task<IReadOnlyList<long>> EnqueueAsync(Darq darq, int first, int count)
    {
        var lsns = new List<long>(count);
        for (int i = first; i < first + count; i++)
        {
            lsns.Add((await darq.EnqueueAsync(Payload(i))).Lsn);
        }

        return lsns;
    }

    /// <summary>
    /// Reads and consumes one message at a time, checking each is the next one, whole, and that memory stays within the
    /// budget plus the message the processor holds and one more (read back because the processor had read everything).
    /// </summary>
    private static async Task StepAllAsync(Darq darq, DarqProcessor processor, IReadOnlyList<long> lsns, int first, bool isReplay, long budget = Budget)
    {
        for (int i = 0; i < lsns.Count; i++)
        {
            var message = await ReadAsync(processor);
            Assert.True(lsns[i] == message.Lsn, $"message {i}: LSN {message.Lsn}, expected {lsns[i]}");
            Assert.Equal(DarqMessageKind.In, message.Kind);
            Assert.Equal(isReplay, message.IsReplay);
            Assert.True(Payload(first + i).Span.SequenceEqual(message.Payload.Span), $"message {i}: payload differs");
            Assert.True(darq.BufferedInBytes <= budget + (2 * PayloadSize), $"message {i}: {darq.BufferedInBytes} bytes buffered, budget {budget}");
            await processor.StepAsync(new DarqStep().Consume(message));
        }
    }

    private static async Task<DarqMessage> ReadAsync(DarqProcessor processor) => await processor.Messages.ReadAsync().AsTask().WaitAsync(ReadLimit);

    /// <summary>A payload that names its index and fills the rest with a pattern of it.</summary>
    private static ReadOnlyMemory<byte> Payload(int index)
    {
        var payload = new byte[PayloadSize];
        Encoding.ASCII.GetBytes(index.ToString("D6", CultureInfo.InvariantCulture)).CopyTo(payload, 0);
        for (int i = 6; i < payload.Length; i++)
        {
            payload[i] = (byte)(index + i);
        }

        return payload;
    }

    private static int Index(DarqMessage message) => int.Parse(Encoding.ASCII.GetString(message.Payload.Span[..6]), CultureInfo.InvariantCulture);
}
