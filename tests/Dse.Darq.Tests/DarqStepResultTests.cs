namespace Dse.Darq.Tests;

/// <summary>
/// <see cref="DarqStepResult"/> keeps a completion-only result in one packed long and anything else in a small object;
/// both forms must give back exactly what they were built from, and compare by value.
/// </summary>
public sealed class DarqStepResultTests
{
    [Theory]
    [InlineData(64, 116)] // packs
    [InlineData(0, 0)]
    [InlineData((1L << 48) - 1, (1L << 48) + 65_534)] // the largest address and footprint that pack
    [InlineData(1L << 48, (1L << 48) + 52)] // the address needs more than 48 bits: kept in an object
    [InlineData(64, 64 + 65_536)] // the footprint needs more than 16 bits
    [InlineData(200, 100)] // durable before the completion record: kept as given, not packed
    [InlineData(-5, 10)]
    [InlineData(long.MaxValue - 10, long.MaxValue)]
    public void Completion_GivesBackBothAddressesWhetherItPacksOrNot(long completionLsn, long durableAt)
    {
        var result = DarqStepResult.Completion(completionLsn, durableAt);

        Assert.Equal(completionLsn, result.CompletionLsn);
        Assert.Equal(durableAt, result.DurableAt);
        Assert.Empty(result.SelfLsns);
        Assert.Empty(result.OutLsns);
        Assert.Equal(new DarqStepResult([], [], completionLsn, durableAt), result);
    }

    [Fact]
    public void Constructor_WithLists_GivesBackTheSameLists()
    {
        long[] self = [64, 1_100];
        long[] outs = [2_200];

        var result = new DarqStepResult(self, outs, 3_300, 3_352);

        Assert.Same(self, result.SelfLsns);
        Assert.Same(outs, result.OutLsns);
        Assert.Equal(3_300, result.CompletionLsn);
        Assert.Equal(3_352, result.DurableAt);
        var (deconstructedSelf, deconstructedOut, completion, durable) = result;
        Assert.Same(self, deconstructedSelf);
        Assert.Same(outs, deconstructedOut);
        Assert.Equal((3_300L, 3_352L), (completion, durable));
    }

    [Fact]
    public void Default_HasEmptyListsNotNull()
    {
        var result = default(DarqStepResult);

        Assert.Empty(result.SelfLsns);
        Assert.Empty(result.OutLsns);
        Assert.Equal(0, result.CompletionLsn);
        Assert.Equal(0, result.DurableAt);
    }

    [Fact]
    public void Constructor_NullList_Throws()
    {
        Assert.Throws<ArgumentNullException>(() => new DarqStepResult(null!, [], 64, 116));
        Assert.Throws<ArgumentNullException>(() => new DarqStepResult([], null!, 64, 116));
    }

    [Fact]
    public void Equality_ComparesAddressesAndListContents()
    {
        var packed = DarqStepResult.Completion(64, 116);
        var built = new DarqStepResult(new List<long>(), Array.Empty<long>(), 64, 116);
        var withLists = new DarqStepResult([1, 2], [3], 64, 116);
        var sameLists = new DarqStepResult(new List<long> { 1, 2 }, new List<long> { 3 }, 64, 116);

        Assert.Equal(packed, built);
        Assert.Equal(packed.GetHashCode(), built.GetHashCode());
        Assert.Equal(withLists, sameLists);
        Assert.Equal(withLists.GetHashCode(), sameLists.GetHashCode());
        Assert.NotEqual(packed, withLists);
        Assert.NotEqual(withLists, new DarqStepResult([1, 2], [4], 64, 116));
        Assert.NotEqual(packed, DarqStepResult.Completion(64, 117));
        Assert.NotEqual(packed, DarqStepResult.Completion(65, 116));
        Assert.True(packed == built);
        Assert.True(packed != withLists);
    }

    [Fact]
    public void ToString_NamesEveryPart()
    {
        string text = new DarqStepResult([64], [1_100, 2_200], 3_300, 3_352).ToString();

        Assert.Equal("DarqStepResult { SelfLsns = [64], OutLsns = [1100, 2200], CompletionLsn = 3300, DurableAt = 3352 }", text);
    }

    [Fact]
    public async Task ConsumeOnlyStep_ResultEndsAtTheTailAndIsDurableOnceCommitted()
    {
        var storage = new DarqTestStorage();
        await using var darq = await storage.OpenAsync();
        var message = await darq.EnqueueAsync("m".Bytes());
        var processor = await darq.RegisterProcessorAsync();
        long before = darq.TailAddress;

        var result = await processor.StepAsync(new DarqStep().Consume(message.Lsn));

        Assert.Equal(before, result.CompletionLsn);
        Assert.Equal(darq.TailAddress, result.DurableAt);
        Assert.Empty(result.SelfLsns);
        Assert.Empty(result.OutLsns);
        var durable = darq.WaitForCommitAsync(result.DurableAt).AsTask();
        Assert.False(durable.IsCompleted);
        await darq.CommitAsync();
        await durable.WaitAsync(TimeSpan.FromSeconds(30));
    }
}
