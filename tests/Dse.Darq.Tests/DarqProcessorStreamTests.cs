using System.Threading.Channels;

namespace Dse.Darq.Tests;

/// <summary>
/// The processor's stream: messages are values (<see cref="DarqMessage"/> is a struct), the stream has one reader, and it
/// counts what waits in it through every way of reading it (the feed of a spilled backlog relies on that count).
/// </summary>
public sealed class DarqProcessorStreamTests
{
    [Fact]
    public async Task Messages_CountsWhatWaits_ThroughEveryWayOfReading()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        for (int i = 0; i < 6; i++)
        {
            await darq.EnqueueAsync($"m{i}".Bytes());
        }

        var processor = await darq.RegisterProcessorAsync();
        var stream = processor.Messages;
        Assert.True(stream.CanCount);
        Assert.Equal(6, stream.Count);

        Assert.True(stream.TryPeek(out var peeked));
        Assert.Equal("m0", peeked.Text());
        Assert.Equal(6, stream.Count);

        Assert.True(stream.TryRead(out var first));
        Assert.Equal("m0", first.Text());
        Assert.Equal(5, stream.Count);

        var second = await stream.ReadAsync();
        Assert.Equal("m1", second.Text());
        Assert.Equal(4, stream.Count);

        var buffer = new List<DarqMessage>();
        Assert.Equal(2, await processor.ReadAvailableAsync(buffer, 2));
        Assert.Equal(["m2", "m3"], buffer.Select(m => m.Text()));
        Assert.Equal(2, stream.Count);

        await using (var all = processor.ReadAllAsync().GetAsyncEnumerator())
        {
            Assert.True(await all.MoveNextAsync());
            Assert.Equal("m4", all.Current.Text());
        }

        Assert.Equal(1, stream.Count);

        // Live traffic is counted as it arrives.
        await darq.EnqueueAsync("live".Bytes());
        Assert.Equal(2, stream.Count);
        Assert.Equal(["m5", "live"], processor.Drain().Select(m => m.Text()));
        Assert.Equal(0, stream.Count);
        Assert.False(stream.TryRead(out _));
        Assert.Equal(0, stream.Count);
    }

    [Fact]
    public async Task Messages_SpeculationOff_CountsOnlyWhatACommitReleased()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(options => options.Speculation = DarqSpeculationMode.Off);
        var processor = await darq.RegisterProcessorAsync();

        await darq.EnqueueAsync("held".Bytes());
        // Held back until a commit covers it: not in the stream, so not counted.
        Assert.Equal(0, processor.Messages.Count);
        Assert.False(processor.Messages.TryRead(out _));

        await darq.CommitAsync();
        Assert.Equal(1, processor.Messages.Count);
        var message = await processor.Messages.ReadAsync().AsTask().WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal("held", message.Text());
        Assert.Equal(0, processor.Messages.Count);
    }

    [Fact]
    public async Task Messages_Superseded_EndsAfterWhatWasHandedOver_AndCountsNothingMore()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        await darq.EnqueueAsync("a".Bytes());
        var old = await darq.RegisterProcessorAsync();
        var newer = await darq.RegisterProcessorAsync();

        // The old stream still yields what it was handed, then ends with the stale-incarnation error.
        Assert.Equal(1, old.Messages.Count);
        Assert.Equal("a", (await old.Messages.ReadAsync()).Text());
        // ReadAsync wraps the error, as for any completed channel; ReadAllAsync and Completion give it as is.
        var closed = await Assert.ThrowsAsync<ChannelClosedException>(() => old.Messages.ReadAsync().AsTask());
        Assert.IsType<DarqStaleIncarnationException>(closed.InnerException);
        await Assert.ThrowsAsync<DarqStaleIncarnationException>(async () =>
        {
            await foreach (var unexpected in old.ReadAllAsync())
            {
                Assert.Fail($"the superseded stream yielded LSN {unexpected.Lsn}");
            }
        });
        await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => old.Messages.Completion);

        // A message that arrives afterwards goes to the newer processor only; the old stream's count stays at zero.
        await darq.EnqueueAsync("b".Bytes());
        Assert.Equal(0, old.Messages.Count);
        Assert.Equal(["a", "b"], newer.Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Message_IsAValue_EqualWhenItsFieldsAre()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var enqueued = await darq.EnqueueAsync("v".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        var message = processor.Drain().Single();

        var copy = message;
        Assert.Equal(message, copy);
        Assert.Equal(enqueued.Lsn, message.Lsn);
        Assert.Equal(DarqMessageKind.In, message.Kind);
        Assert.True(message.IsReplay);
        Assert.NotEqual(message, message with { IsReplay = false });

        // default is no message the DARQ handed out: its LSN 0 lies below the log's first address, where everything counts
        // as consumed, so stepping it is refused and changes nothing.
        long tail = darq.TailAddress;
        var refused = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepAsync(new DarqStep().Consume(default(DarqMessage))).AsTask());
        Assert.Equal(DarqStepRejection.AlreadyConsumed, refused.Reason);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);
        await processor.StepAsync(new DarqStep().Consume(message));
        Assert.Equal(0, darq.UnconsumedCount);
    }
}
