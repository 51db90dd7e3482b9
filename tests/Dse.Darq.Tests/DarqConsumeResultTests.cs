namespace Dse.Darq.Tests;

/// <summary>
/// <see cref="DarqConsumeResult"/>, the 8-byte result of the consume-only API: its durable address is the end of the
/// one completion record, and it says what a general step's result would.
/// </summary>
public sealed class DarqConsumeResultTests
{
    [Theory]
    [InlineData(0)]
    [InlineData(64)]
    [InlineData((1L << 48) - 1)]
    public void DurableAt_IsTheEndOfTheCompletionRecord(long completionLsn)
    {
        var result = new DarqConsumeResult(completionLsn);

        Assert.Equal(completionLsn, result.CompletionLsn);
        Assert.Equal(completionLsn + DarqEntryFormat.LogFootprint(DarqEntryFormat.CompletionLength(1)), result.DurableAt);
        Assert.Equal(new DarqStepResult([], [], completionLsn, result.DurableAt), result.ToStepResult());
    }

    [Fact]
    public void Constructor_NegativeAddress_Throws()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new DarqConsumeResult(-1));
    }

    [Fact]
    public void Equality_ByAddress_AndToStringNamesBothAddresses()
    {
        Assert.Equal(new DarqConsumeResult(64), new DarqConsumeResult(64));
        Assert.NotEqual(new DarqConsumeResult(64), new DarqConsumeResult(116));
        Assert.Equal("DarqConsumeResult { CompletionLsn = 64, DurableAt = 116 }", new DarqConsumeResult(64).ToString());
    }

    [Fact]
    public async Task Consume_SameResultAndLogAsAConsumeOnlyStep_DurableOnceCommitted()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var first = await darq.EnqueueAsync("a".Bytes());
        var second = await darq.EnqueueAsync("b".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        long before = darq.TailAddress;

        var stepped = await processor.StepAsync(new DarqStep().Consume(first.Lsn));
        var consumed = await processor.ConsumeAsync(second.Lsn);

        Assert.Equal(before, stepped.CompletionLsn);
        Assert.Equal(stepped.DurableAt, consumed.CompletionLsn);
        Assert.Equal(darq.TailAddress, consumed.DurableAt);
        Assert.Equal(stepped.DurableAt - stepped.CompletionLsn, consumed.DurableAt - consumed.CompletionLsn);
        Assert.Equal(0, darq.UnconsumedCount);
        var durable = darq.WaitForCommitAsync(consumed.DurableAt).AsTask();
        Assert.False(durable.IsCompleted);
        await darq.CommitAsync();
        await durable.WaitAsync(TimeSpan.FromSeconds(30));
    }
}
