namespace Dse.Darq.Tests;

/// <summary>
/// A DARQ's commit records which speculation mode wrote it: a log written without general speculation has no version
/// records, so opening it with general speculation (which would restore version 0 and void every entry) is refused.
/// </summary>
public sealed class DarqSpeculationModeSwitchTests
{
    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Open_GeneralOnLogWrittenIntraParticipant_RefusedAndNothingLost()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync())
        {
            await darq.EnqueueAsync(7, 1, "a".Bytes());
            await darq.EnqueueAsync(7, 2, "b".Bytes());
            await darq.CommitAsync();
        }

        var coordinator = new ClusterCoordinator();
        var error = await Assert.ThrowsAsync<InvalidOperationException>(
            () => storage.OpenAsync(DarqGeneralSpeculationTests.General("darq", 1, coordinator)));
        Assert.Contains("written without general speculation", error.Message, StringComparison.Ordinal);

        // The refused open changed nothing: the mode that wrote the log still sees both messages and the dedup table.
        await using var reopened = await storage.OpenAsync();
        var processor = await reopened.RegisterProcessorAsync();
        Assert.Equal(["a", "b"], processor.Drain().Select(m => m.Text()));
        Assert.True((await reopened.EnqueueAsync(7, 2, "b".Bytes())).IsDuplicate);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Open_GeneralOnEmptyStorageThenReopenGeneral_Accepted()
    {
        var storage = new DarqTestStorage();
        var coordinator = new ClusterCoordinator();
        await using (var darq = await storage.OpenAsync(DarqGeneralSpeculationTests.General("darq", 1, coordinator)))
        {
            await darq.EnqueueAsync(7, 1, "a".Bytes());
            await darq.DseStateObject!.AdvanceVersionAsync();
        }

        await using var reopened = await storage.OpenAsync(DarqGeneralSpeculationTests.General("darq", 1, coordinator));
        Assert.NotNull(reopened.DseStateObject);
    }

    [Theory]
    [InlineData(2)]
    [InlineData(3)]
    [Trait("Category", "Recovery")]
    public async Task Open_IntraParticipantOnLogWrittenGeneral_RecoversTheNewestCommit(int messages)
    {
        // Commits alternate between two slots; with background commits off, one more message puts the newest commit in
        // the other slot. It must be found whichever mode wrote it.
        var storage = new DarqTestStorage();
        var coordinator = new ClusterCoordinator();
        var expected = new List<string>();
        long committed;
        await using (var darq = await storage.OpenAsync(o =>
        {
            DarqGeneralSpeculationTests.General("darq", 1, coordinator)(o);
            o.CommitInterval = Timeout.InfiniteTimeSpan;
        }))
        {
            for (int i = 1; i <= messages; i++)
            {
                await darq.EnqueueAsync(7, i, $"m{i}".Bytes());
                expected.Add($"m{i}");
                await darq.DseStateObject!.AdvanceVersionAsync();
            }

            committed = darq.TailAddress;
        }

        await using var reopened = await storage.OpenAsync(o => o.CommitInterval = Timeout.InfiniteTimeSpan);
        Assert.True(reopened.CommittedUntilAddress >= committed, $"recovered up to {reopened.CommittedUntilAddress}, but {committed} was committed");
        var processor = await reopened.RegisterProcessorAsync();
        Assert.Equal(expected, processor.Drain().Select(m => m.Text()));
    }
}
