namespace Dse.Darq.Tests;

/// <summary>The DARQ rules (docs/darq-format.md) this slice covers, and bad input, on in-memory storage.</summary>
public sealed class DarqRulesTests
{
    [Fact]
    public async Task Step_MessageAlreadyConsumed_RefusedAndNothingApplied()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var b = await darq.EnqueueAsync("b".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        await processor.StepAsync(new DarqStep().Consume(a.Lsn).AddSelf("s1".Bytes()));
        long tail = darq.TailAddress;

        // b is valid, a is not: the whole step is refused, so b stays unconsumed and nothing is appended.
        var error = await Assert.ThrowsAsync<DarqStepRejectedException>(
            () => processor.StepAsync(new DarqStep().Consume(b.Lsn).Consume(a.Lsn).AddSelf("s2".Bytes())).AsTask());

        Assert.Equal(a.Lsn, error.Lsn);
        Assert.Equal(DarqStepRejection.AlreadyConsumed, error.Reason);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(2, darq.UnconsumedCount); // b and s1
        await processor.StepAsync(new DarqStep().Consume(b.Lsn));
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Step_SelfOutAndCompletion_AppendedContiguouslyWithCompletionLast()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        long before = darq.TailAddress;

        var result = await processor.StepAsync(new DarqStep().Consume(a.Lsn).AddSelf("s1".Bytes()).AddSelf("s2".Bytes()).AddOut("other", "o".Bytes()));

        long[] lsns = [.. result.SelfLsns, .. result.OutLsns, result.CompletionLsn];
        Assert.Equal(before, lsns[0]);
        for (int i = 1; i < lsns.Length; i++)
        {
            Assert.True(lsns[i] > lsns[i - 1], $"entry {i} at {lsns[i]} is not after entry {i - 1} at {lsns[i - 1]}");
        }

        Assert.Equal(darq.TailAddress, result.DurableAt);
        await darq.CommitAsync();
        await darq.WaitForCommitAsync(result.DurableAt);
        Assert.True(darq.CommittedUntilAddress >= result.DurableAt);
    }

    [Fact]
    public async Task Step_StaleIncarnation_RefusedAndOldStreamEnds()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var first = await darq.RegisterProcessorAsync();
        var second = await darq.RegisterProcessorAsync();

        Assert.Equal(1, first.Incarnation);
        Assert.Equal(2, second.Incarnation);
        var error = await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => first.StepAsync(new DarqStep().Consume(a.Lsn)).AsTask());
        Assert.Equal(1, error.Incarnation);
        Assert.Equal(2, error.CurrentIncarnation);
        await Assert.ThrowsAsync<DarqStaleIncarnationException>(async () =>
        {
            await foreach (var message in first.ReadAllAsync())
            {
                _ = message;
            }
        });
        Assert.Equal(1, darq.UnconsumedCount);
        await second.StepAsync(new DarqStep().Consume(a.Lsn));
        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Step_NoProcessorRegistered_RefusedAsStale()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());

        await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => darq.StepAsync(0, new DarqStep().Consume(a.Lsn)).AsTask());
    }

    [Fact]
    public async Task Step_UnknownLsn_RefusedAndNothingApplied()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        long tail = darq.TailAddress;

        var error = await Assert.ThrowsAsync<DarqStepRejectedException>(
            () => processor.StepAsync(new DarqStep().Consume(a.Lsn).Consume(a.Lsn + 1)).AsTask());

        Assert.Equal(DarqStepRejection.UnknownMessage, error.Reason);
        Assert.Equal(a.Lsn + 1, error.Lsn);
        Assert.Contains($"LSN {a.Lsn + 1}", error.Message, StringComparison.Ordinal);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Step_ConsumesOutMessage_RefusedAsNotSteppable()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        var produced = await processor.StepAsync(new DarqStep().AddOut("other", "o".Bytes()));

        var error = await Assert.ThrowsAsync<DarqStepRejectedException>(
            () => processor.StepAsync(new DarqStep().Consume(produced.OutLsns[0])).AsTask());

        Assert.Equal(DarqStepRejection.NotSteppable, error.Reason);
    }

    [Fact]
    public async Task Step_SameLsnTwiceInOneStep_Refused()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var processor = await darq.RegisterProcessorAsync();

        var error = await Assert.ThrowsAsync<DarqStepRejectedException>(
            () => processor.StepAsync(new DarqStep().Consume(a.Lsn).Consume(a.Lsn)).AsTask());

        Assert.Equal(DarqStepRejection.ConsumedTwiceInStep, error.Reason);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Step_SameLsnTwiceAmongManyConsumed_RefusedAndNothingApplied()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        var step = new DarqStep();
        long first = -1;
        for (int i = 0; i < 100; i++)
        {
            long lsn = (await darq.EnqueueAsync("x".Bytes())).Lsn;
            first = first < 0 ? lsn : first;
            step.Consume(lsn);
        }

        long tail = darq.TailAddress;
        var error = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepAsync(step.Consume(first)).AsTask());

        Assert.Equal(DarqStepRejection.ConsumedTwiceInStep, error.Reason);
        Assert.Equal(first, error.Lsn);
        Assert.Equal(100, darq.UnconsumedCount);
        Assert.Equal(tail, darq.TailAddress);
    }

    [Fact]
    public async Task Step_ConsumesFiftyThousandMessages_AppliedWhole()
    {
        // Validation runs under the gate; a quadratic duplicate check took seconds at this size.
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o =>
        {
            o.PageSize = 1 << 20;
            o.MemorySize = 1 << 23;
            o.SegmentSize = 1 << 22;
            o.MaxMessageSize = 1024;
        });
        var processor = await darq.RegisterProcessorAsync();
        var step = new DarqStep();
        for (int i = 0; i < 50_000; i++)
        {
            step.Consume((await darq.EnqueueAsync("x".Bytes())).Lsn);
        }

        await processor.StepAsync(step);

        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Enqueue_OversizedPayload_ArgumentExceptionAndNothingAppended()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        long tail = darq.TailAddress;

        var error = Assert.Throws<ArgumentException>(() => darq.EnqueueAsync(new byte[darq.MaxMessageSize + 1]));

        Assert.Contains("MaxMessageSize", error.Message, StringComparison.Ordinal);
        Assert.Equal(tail, darq.TailAddress);
        var atLimit = await darq.EnqueueAsync(new byte[darq.MaxMessageSize]);
        Assert.False(atLimit.IsDuplicate);
    }

    [Fact]
    public async Task Step_BadShape_ArgumentException()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        var big = new byte[darq.MaxMessageSize];

        await Assert.ThrowsAsync<ArgumentException>(() => processor.StepAsync(new DarqStep()).AsTask());
        await Assert.ThrowsAsync<ArgumentException>(() => processor.StepAsync(new DarqStep().AddSelf(new byte[darq.MaxMessageSize + 1])).AsTask());
        await Assert.ThrowsAsync<ArgumentException>(() => processor.StepAsync(new DarqStep().AddOut(new string('d', 257), "o".Bytes())).AsTask());
        var tooBig = await Assert.ThrowsAsync<ArgumentException>(
            () => processor.StepAsync(new DarqStep().AddSelf(big).AddSelf(big).AddSelf(big).AddSelf(big)).AsTask());
        Assert.Contains("one log page", tooBig.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentOutOfRangeException>(() => darq.EnqueueAsync(1, -1, "x".Bytes()));
    }

    [Fact]
    public async Task Enqueue_DuplicateSequence_AcknowledgedWithoutSecondEntry()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var first = await darq.EnqueueAsync(producerId: 7, sequenceNumber: 1, "a".Bytes());
        long tail = darq.TailAddress;

        var again = await darq.EnqueueAsync(producerId: 7, sequenceNumber: 1, "a".Bytes());
        var older = await darq.EnqueueAsync(producerId: 7, sequenceNumber: 0, "z".Bytes());
        var otherProducer = await darq.EnqueueAsync(producerId: 8, sequenceNumber: 1, "b".Bytes());

        Assert.False(first.IsDuplicate);
        Assert.True(again.IsDuplicate);
        Assert.True(older.IsDuplicate);
        Assert.Equal(-1, again.Lsn);
        Assert.True(again.DurableAt >= first.DurableAt);
        Assert.False(otherProducer.IsDuplicate);
        Assert.Equal(2, darq.UnconsumedCount);
        Assert.True(darq.TailAddress > tail);
    }

    [Fact]
    public async Task Enqueue_MoreProducersThanTheLimit_Refused()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync(o => o.MaxProducers = 2);
        await darq.EnqueueAsync(1, 0, "a".Bytes());
        await darq.EnqueueAsync(2, 0, "b".Bytes());

        await Assert.ThrowsAsync<InvalidOperationException>(() => darq.EnqueueAsync(3, 0, "c".Bytes()).AsTask());
        Assert.False((await darq.EnqueueAsync(1, 1, "d".Bytes())).IsDuplicate);
    }

    [Fact]
    public async Task Register_LiveTraffic_FollowsReplayAndIsMarkedLive()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var a = await darq.EnqueueAsync("a".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        var b = await darq.EnqueueAsync("b".Bytes());

        var messages = processor.Drain();

        Assert.Equal(1, processor.ReplayCount);
        Assert.Equal([(a.Lsn, true), (b.Lsn, false)], messages.Select(m => (m.Lsn, m.IsReplay)));
        Assert.All(messages, m => Assert.Equal(DarqMessageKind.In, m.Kind));
    }

    [Fact]
    public async Task Truncate_CompletedPrefix_KeepsUnconsumedMessages()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var processor = await darq.RegisterProcessorAsync();
        var payload = new byte[4000];
        var results = new List<DarqEnqueueResult>();
        for (int i = 0; i < 100; i++)
        {
            results.Add(await darq.EnqueueAsync(payload));
        }

        // Consume all but messages 60 and 80; also leave one SELF message.
        var step = new DarqStep().AddSelf("state".Bytes());
        for (int i = 0; i < 100; i++)
        {
            if (i is not (60 or 80))
            {
                step.Consume(results[i].Lsn);
            }
        }

        await processor.StepAsync(step);
        long begin = await darq.TruncateAsync();

        Assert.Equal(results[60].Lsn, begin);
        Assert.Equal(begin, darq.BeginAddress);
        var reprocessor = await darq.RegisterProcessorAsync();
        var replay = reprocessor.Drain();
        Assert.Equal([DarqMessageKind.Self, DarqMessageKind.In, DarqMessageKind.In], replay.Select(m => m.Kind));
        Assert.Equal([results[60].Lsn, results[80].Lsn], replay.Skip(1).Select(m => m.Lsn));
        var stale = await Assert.ThrowsAsync<DarqStepRejectedException>(() => reprocessor.StepAsync(new DarqStep().Consume(results[10].Lsn)).AsTask());
        Assert.Equal(DarqStepRejection.AlreadyConsumed, stale.Reason);
    }
}
