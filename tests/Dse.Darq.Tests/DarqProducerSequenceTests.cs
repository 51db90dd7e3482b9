namespace Dse.Darq.Tests;

/// <summary>
/// <see cref="DarqOptions.ContiguousProducerSequences"/>: a producer's enqueue that skips sequence numbers is refused with
/// the number expected, so enqueues lost to a restart or voided by a rollback are resent under the same producer id
/// instead of being dropped as duplicates once a later number was taken.
/// </summary>
public sealed class DarqProducerSequenceTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    private static void Contiguous(DarqOptions options) => options.ContiguousProducerSequences = true;

    [Fact]
    public async Task Enqueue_Contiguous_TakesTheNextNumberAndRefusesAGapChangingNothing()
    {
        await using var darq = await new DarqTestStorage().OpenAsync(Contiguous);
        Assert.False((await darq.EnqueueAsync(7, 0, "m0".Bytes())).IsDuplicate);
        Assert.False((await darq.EnqueueAsync(7, 1, "m1".Bytes())).IsDuplicate);
        long tail = darq.TailAddress;

        var gap = await Assert.ThrowsAsync<DarqSequenceGapException>(async () => await darq.EnqueueAsync(7, 3, "m3".Bytes()));

        Assert.Equal("test", gap.DarqName);
        Assert.Equal(7, gap.ProducerId);
        Assert.Equal(3, gap.SequenceNumber);
        Assert.Equal(2, gap.ExpectedSequenceNumber);
        Assert.Contains("resend from 2", gap.Message, StringComparison.Ordinal);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(2, darq.UnconsumedCount);

        // A lower number is still a duplicate, and the expected one goes through, then the refused one.
        Assert.True((await darq.EnqueueAsync(7, 1, "m1".Bytes())).IsDuplicate);
        Assert.False((await darq.EnqueueAsync(7, 2, "m2".Bytes())).IsDuplicate);
        Assert.False((await darq.EnqueueAsync(7, 3, "m3".Bytes())).IsDuplicate);
        Assert.Equal(["m0", "m1", "m2", "m3"], (await darq.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Enqueue_Contiguous_NewProducerStartsAtZero()
    {
        await using var darq = await new DarqTestStorage().OpenAsync(Contiguous);

        var gap = await Assert.ThrowsAsync<DarqSequenceGapException>(async () => await darq.EnqueueAsync(8, 1, "m1".Bytes()));

        Assert.Equal(0, gap.ExpectedSequenceNumber);
        Assert.Equal(0, darq.UnconsumedCount);
        Assert.False((await darq.EnqueueAsync(8, 0, "m0".Bytes())).IsDuplicate);

        // Enqueues without a producer id are not numbered, so never checked.
        Assert.False((await darq.EnqueueAsync("plain".Bytes())).IsDuplicate);
        Assert.Equal(2, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Enqueue_Default_TakesAGapAndDropsTheSkippedNumbersAsDuplicates()
    {
        // What the option guards against: without it, a skipped number arriving late is taken for a duplicate.
        await using var darq = await new DarqTestStorage().OpenAsync();
        Assert.False((await darq.EnqueueAsync(7, 0, "m0".Bytes())).IsDuplicate);
        Assert.False((await darq.EnqueueAsync(7, 5, "m5".Bytes())).IsDuplicate);

        Assert.True((await darq.EnqueueAsync(7, 3, "m3".Bytes())).IsDuplicate);
        Assert.Equal(2, darq.UnconsumedCount);
    }

    [Fact]
    public async Task Receive_Contiguous_DeliveriesWithLsnGapsAreTaken()
    {
        await using var darq = await new DarqTestStorage().OpenAsync(Contiguous);

        // Source LSNs have gaps: deliveries are deduplicated by the largest, never checked for contiguity.
        Assert.False((await darq.ReceiveAsync(new DarqDelivery("a", 100, "test", "x".Bytes()))).IsDuplicate);
        Assert.False((await darq.ReceiveAsync(new DarqDelivery("a", 250, "test", "y".Bytes()))).IsDuplicate);
        Assert.True((await darq.ReceiveAsync(new DarqDelivery("a", 100, "test", "x".Bytes()))).IsDuplicate);
        Assert.Equal(2, darq.UnconsumedCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restart_Contiguous_EnqueuesLostWithTheUncommittedTailAreRefusedThenResent()
    {
        var storage = new DarqTestStorage();
        await using (var darq = await storage.OpenAsync(Contiguous))
        {
            await darq.EnqueueAsync(7, 0, "m0".Bytes());
            await darq.EnqueueAsync(7, 1, "m1".Bytes());
            await darq.CommitAsync();

            // The producer runs ahead: 2 and 3 are appended but never committed.
            await darq.EnqueueAsync(7, 2, "m2".Bytes());
            await darq.EnqueueAsync(7, 3, "m3".Bytes());
            storage.CrashNow();
        }

        await using var reopened = await storage.OpenAsync(Contiguous);
        long tail = reopened.TailAddress;

        var gap = await Assert.ThrowsAsync<DarqSequenceGapException>(async () => await reopened.EnqueueAsync(7, 4, "m4".Bytes()));

        Assert.Equal(2, gap.ExpectedSequenceNumber);
        Assert.Equal(tail, reopened.TailAddress);
        foreach (int n in new[] { 2, 3, 4 })
        {
            Assert.False((await reopened.EnqueueAsync(7, n, $"m{n}".Bytes())).IsDuplicate);
        }

        await reopened.CommitAsync();
        Assert.Equal(["m0", "m1", "m2", "m3", "m4"], (await reopened.RegisterProcessorAsync()).Drain().Select(m => m.Text()));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Rollback_GeneralContiguous_ProducerAheadIsRefusedAndResendsUnderTheSameId()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var (b, a2) = await RollBackProducerTailAsync(contiguous: true, guard.Token);
        await using var ownedB = b;
        await using var ownedA = a2;
        long tail = b.TailAddress;

        // The producer has not learnt of the rollback: its next number would skip the voided 2 and 3.
        var gap = await Assert.ThrowsAsync<DarqSequenceGapException>(async () => await b.EnqueueAsync(9, 4, "m4".Bytes(), guard.Token));

        Assert.Equal(2, gap.ExpectedSequenceNumber);
        Assert.Equal(tail, b.TailAddress);
        foreach (int n in new[] { 2, 3, 4 })
        {
            Assert.False((await b.EnqueueAsync(9, n, $"m{n}".Bytes(), guard.Token)).IsDuplicate);
        }

        Assert.Equal(["m0", "m1", "m2", "m3", "m4"], (await b.RegisterProcessorAsync(guard.Token)).Drain().Select(m => m.Text()));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Rollback_GeneralDefault_VoidedEnqueueResentAfterALaterOneIsLost()
    {
        // The hazard the option closes, pinned: without it the later number is taken and the voided ones are duplicates.
        using var guard = new CancellationTokenSource(HangGuard);
        var (b, a2) = await RollBackProducerTailAsync(contiguous: false, guard.Token);
        await using var ownedB = b;
        await using var ownedA = a2;

        Assert.False((await b.EnqueueAsync(9, 4, "m4".Bytes(), guard.Token)).IsDuplicate);
        Assert.True((await b.EnqueueAsync(9, 2, "m2".Bytes(), guard.Token)).IsDuplicate);

        Assert.Equal(["m0", "m1", "m4"], (await b.RegisterProcessorAsync(guard.Token)).Drain().Select(m => m.Text()));
    }

    /// <summary>
    /// B (general speculation) takes producer 9's 0 and 1 in a committed version, then 2 and 3 in a version that depends on
    /// A's state that never persists; A crashes and restarts, and B rolls back to the committed version, voiding 2 and 3.
    /// Returns B and the restarted A.
    /// </summary>
    private static async Task<(Darq B, Darq A)> RollBackProducerTailAsync(bool contiguous, CancellationToken cancellationToken)
    {
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();
        var b = await new DarqTestStorage().OpenAsync(o =>
        {
            DarqGeneralSpeculationTests.General("b", 2, coordinator)(o);
            o.ContiguousProducerSequences = contiguous;
        });
        try
        {
            await b.EnqueueAsync(9, 0, "m0".Bytes(), cancellationToken);
            await b.EnqueueAsync(9, 1, "m1".Bytes(), cancellationToken);
            await b.DseStateObject!.AdvanceVersionAsync(cancellationToken);
            await b.DseStateObject.WaitForCommitAsync(1, 0, cancellationToken);

            await using (var a = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator)))
            {
                await a.EnqueueAsync("x".Bytes(), cancellationToken);
                await a.DseStateObject!.StartLocalActionAsync(cancellationToken);
                var fromA = a.DseStateObject.EndAction();
                await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "from-a".Bytes()) { DseHeader = fromA.ToArray() }, cancellationToken);
                await b.EnqueueAsync(9, 2, "m2".Bytes(), cancellationToken);
                await b.EnqueueAsync(9, 3, "m3".Bytes(), cancellationToken);
                await b.DseStateObject.AdvanceVersionAsync(cancellationToken);
                aStorage.CrashNow();
            }

            var a2 = await aStorage.OpenAsync(DarqGeneralSpeculationTests.General("a", 1, coordinator));
            await b.DseStateObject.RefreshAsync(cancellationToken);
            Assert.Equal(1, b.DseStateObject.WorldLine);
            Assert.Equal(2, b.UnconsumedCount);
            return (b, a2);
        }
        catch
        {
            await b.DisposeAsync();
            throw;
        }
    }
}
