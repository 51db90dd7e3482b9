namespace Dse.Darq.Tests;

/// <summary>
/// General speculation through LibDse: DARQs as StateObjects under an embedded <see cref="ClusterCoordinator"/>, OUT
/// messages that leave before they are committed, rollback of dependents when a source loses its tail.
/// </summary>
public sealed class DarqGeneralSpeculationTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    /// <summary>Background tasks follow the coordinator; the ten-minute period means versions advance only when a test says so.</summary>
    private static DseOptions Dse(long id) => new()
    {
        ObjectId = id,
        RunBackgroundTasks = true,
        GroupCommitPeriod = TimeSpan.FromMinutes(10),
        HeartbeatPeriod = TimeSpan.FromMinutes(10),
    };

    internal static Action<DarqOptions> General(string name, long id, IDseCoordinator coordinator, IDarqDestinations? destinations = null) => o =>
    {
        o.Name = name;
        o.Speculation = DarqSpeculationMode.General;
        o.Dse = Dse(id);
        o.Coordinator = coordinator;
        o.Destinations = destinations;
        o.DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(1);
        o.DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(5);
    };

    [Fact]
    public async Task Deliver_General_DestinationProcessorSeesMessageBeforeSourceCommits()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var destinations = new TestDestinations();
        await using var b = await new DarqTestStorage().OpenAsync(General("b", 2, coordinator));
        destinations.Registry.Add(b);
        await using var a = await new DarqTestStorage().OpenAsync(General("a", 1, coordinator, destinations));
        var bProcessor = await b.RegisterProcessorAsync();
        var aProcessor = await a.RegisterProcessorAsync();

        var step = await aProcessor.StepAsync(new DarqStep().AddOut("b", "x".Bytes()));
        var received = await bProcessor.Messages.ReadAsync(guard.Token);

        Assert.Equal("x", received.Text());
        Assert.True(a.CommittedUntilAddress <= step.OutLsns[0], "the source committed the OUT entry before the destination saw it");
        Assert.True(b.CommittedUntilAddress <= received.Lsn, "the destination committed the message before its processor saw it");
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);

        // The barrier: the message is recoverable once both sides persisted and the coordinator committed.
        var barrier = b.WaitForRecoverableAsync(received.Lsn, guard.Token).AsTask();
        Assert.False(barrier.IsCompleted);
        await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await barrier;
        Assert.True(b.DseStateObject.CommittedVersion >= 1);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Crash_SourceLosesSpeculativeTail_DestinationRollsBackAndChainEndsExactlyOnce()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var destinations = new TestDestinations();
        var aStorage = new DarqTestStorage();
        await using var b = await new DarqTestStorage().OpenAsync(General("b", 2, coordinator));
        destinations.Registry.Add(b);
        var bProcessor = await b.RegisterProcessorAsync();

        await using (var a = await aStorage.OpenAsync(General("a", 1, coordinator, destinations)))
        {
            // The input is persisted at A (version 1); the step that forwards it is not.
            await a.EnqueueAsync(7, 1, "m".Bytes(), guard.Token);
            await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
            var aProcessor = await a.RegisterProcessorAsync(guard.Token);
            var input = await aProcessor.Messages.ReadAsync(guard.Token);
            await aProcessor.StepAsync(new DarqStep().Consume(input.Lsn).AddOut("b", input.Payload), guard.Token);

            // B receives speculatively, consumes it, and persists a version that depends on A's lost one.
            var seen = await bProcessor.Messages.ReadAsync(guard.Token);
            await bProcessor.StepAsync(new DarqStep().Consume(seen.Lsn), guard.Token);
            await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
            Assert.Equal(0, b.UnconsumedCount);

            aStorage.CrashNow();
        }

        // A restarts on what survived: the coordinator rolls B back past the message it got from A's lost version.
        await using var a2 = await aStorage.OpenAsync(General("a", 1, coordinator, destinations));
        await b.DseStateObject!.RefreshAsync(guard.Token);
        Assert.Equal(1, b.DseStateObject.WorldLine);
        var closed = await Assert.ThrowsAsync<System.Threading.Channels.ChannelClosedException>(async () => await bProcessor.Messages.ReadAsync(guard.Token));
        Assert.IsType<DarqStaleIncarnationException>(closed.InnerException);
        await Assert.ThrowsAsync<DarqStaleIncarnationException>(async () => await bProcessor.StepAsync(new DarqStep().AddSelf("late".Bytes()), guard.Token));

        // Both restart their processors: A replays the input, forwards it, and B ends it exactly once.
        var bProcessor2 = await b.RegisterProcessorAsync(guard.Token);
        Assert.True(bProcessor2.Incarnation > bProcessor.Incarnation);
        Assert.Equal(0, bProcessor2.ReplayCount);
        var aProcessor2 = await a2.RegisterProcessorAsync(guard.Token);
        var replayed = await aProcessor2.Messages.ReadAsync(guard.Token);
        Assert.Equal("m", replayed.Text());
        await aProcessor2.StepAsync(new DarqStep().Consume(replayed.Lsn).AddOut("b", replayed.Payload), guard.Token);

        var again = await bProcessor2.Messages.ReadAsync(guard.Token);
        Assert.Equal("m", again.Text());
        var end = await bProcessor2.StepAsync(new DarqStep().Consume(again.Lsn), guard.Token);
        await a2.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.DseStateObject.AdvanceVersionAsync(guard.Token);
        await b.WaitForRecoverableAsync(end.DurableAt - 1, guard.Token);
        Assert.False(bProcessor2.Messages.TryRead(out _));
        Assert.Equal(0, b.UnconsumedCount);
    }

    [Fact]
    public async Task Receive_HeaderFromLowerWorldLine_IsRefusedAndChangesNothing()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();
        await using var b = await new DarqTestStorage().OpenAsync(General("b", 2, coordinator));
        DseHeader stale;
        await using (var a = await aStorage.OpenAsync(General("a", 1, coordinator)))
        {
            await a.EnqueueAsync("x".Bytes(), guard.Token);
            await a.DseStateObject!.StartLocalActionAsync(guard.Token);
            stale = a.DseStateObject.EndAction();
            aStorage.CrashNow();
        }

        // A's restart is a failure: the cluster moves to world-line 1, and A's old header is from the lost state.
        await using var a2 = await aStorage.OpenAsync(General("a", 1, coordinator));
        await b.DseStateObject!.RefreshAsync(guard.Token);
        Assert.Equal(1, b.DseStateObject.WorldLine);
        long tail = b.TailAddress;

        var error = await Assert.ThrowsAsync<DarqMessageRefusedException>(async () =>
            await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 100, "b", "x".Bytes()) { DseHeader = stale.ToArray() }, guard.Token));

        Assert.Equal(0, error.MessageWorldLine);
        Assert.Equal(1, error.WorldLine);
        Assert.Equal(tail, b.TailAddress);
        Assert.Equal(0, b.UnconsumedCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restore_LaterVersion_ReopenedDarqHonoursRollbackEntry()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();
        var bStorage = new DarqTestStorage();
        await using (var b = await bStorage.OpenAsync(General("b", 2, coordinator)))
        {
            await using (var a = await aStorage.OpenAsync(General("a", 1, coordinator)))
            {
                // B version 1: "kept". B version 2: "lost", which depends on A's version that never persists.
                await b.EnqueueAsync(5, 1, "kept".Bytes(), guard.Token);
                await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
                await b.DseStateObject.WaitForCommitAsync(1, 0, guard.Token);
                await a.EnqueueAsync("a".Bytes(), guard.Token);
                await a.DseStateObject!.StartLocalActionAsync(guard.Token);
                var fromA = a.DseStateObject.EndAction();
                await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "lost".Bytes()) { DseHeader = fromA.ToArray() }, guard.Token);
                await b.DseStateObject.AdvanceVersionAsync(guard.Token);
                aStorage.CrashNow();
            }

            await using var a2 = await aStorage.OpenAsync(General("a", 1, coordinator));
            await b.DseStateObject!.RefreshAsync(guard.Token);
            Assert.Equal(1, b.DseStateObject.WorldLine);
            Assert.Equal(1, b.UnconsumedCount);
            Assert.Equal(["kept"], (await b.RegisterProcessorAsync(guard.Token)).Drain().Select(m => m.Text()));

            // The dedup table went back too: producer 5's sequence 1 is still a duplicate, A's message can come again.
            Assert.True((await b.EnqueueAsync(5, 1, "kept".Bytes(), guard.Token)).IsDuplicate);
            Assert.False((await b.EnqueueAsync(Darq.SourceProducerId("a"), 1, "again".Bytes(), guard.Token)).IsDuplicate);
            await b.DseStateObject.AdvanceVersionAsync(guard.Token);
        }

        // Reopened, B honours the ROLLBACK entry: the lost message stays gone.
        var coordinator2 = new ClusterCoordinator();
        await using var reopened = await bStorage.OpenAsync(General("b", 2, coordinator2));
        Assert.Equal(["kept", "again"], (await reopened.RegisterProcessorAsync(guard.Token)).Drain().Select(m => m.Text()));
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    [Trait("Category", "Recovery")]
    public async Task Truncate_ConsumedInUncommittedVersion_KeptForTheRollback(bool consumeApi)
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var aStorage = new DarqTestStorage();
        await using var b = await new DarqTestStorage().OpenAsync(General("b", 2, coordinator));
        var first = await b.EnqueueAsync("m1".Bytes(), guard.Token);
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.DseStateObject.WaitForCommitAsync(1, 0, guard.Token);

        await using (var a = await aStorage.OpenAsync(General("a", 1, coordinator)))
        {
            // B's next version consumes m1 and depends on A's version that never persists.
            await a.EnqueueAsync("x".Bytes(), guard.Token);
            await a.DseStateObject!.StartLocalActionAsync(guard.Token);
            var fromA = a.DseStateObject.EndAction();
            await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "from-a".Bytes()) { DseHeader = fromA.ToArray() }, guard.Token);
            var processor = await b.RegisterProcessorAsync(guard.Token);
            // The consume-only API is a LibDse action too (it takes the general path under general speculation).
            long completion = consumeApi
                ? (await processor.ConsumeAsync(first.Lsn, guard.Token)).CompletionLsn
                : (await processor.StepAsync(new DarqStep().Consume(first.Lsn), guard.Token)).CompletionLsn;
            Assert.Equal(1, b.UnconsumedCount); // the message from A
            Assert.True(completion > first.Lsn);
            await b.DseStateObject.AdvanceVersionAsync(guard.Token);

            // m1 is consumed, but the version that consumed it may still roll back: truncation must keep it.
            Assert.True(await b.TruncateAsync(guard.Token) <= first.Lsn);
            aStorage.CrashNow();
        }

        await using var a2 = await aStorage.OpenAsync(General("a", 1, coordinator));
        await b.DseStateObject.RefreshAsync(guard.Token);
        Assert.Equal(["m1"], (await b.RegisterProcessorAsync(guard.Token)).Drain().Select(m => m.Text()));
    }

    [Fact]
    public async Task Deliver_PlainDeliveryIntoGeneralDarq_AcknowledgedOnlyOnceCommittedByCoordinator()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        var registry = new DarqDestinationRegistry();
        await using var b = await new DarqTestStorage().OpenAsync(General("b", 2, coordinator));
        registry.Add(b);

        // A non-speculative source: its acknowledgement is a barrier, not just an append.
        var delivery = registry.Resolve("b")!.DeliverAsync(new DarqDelivery("plain", 1, "b", "x".Bytes()), guard.Token).AsTask();
        var processor = await b.RegisterProcessorAsync(guard.Token);
        Assert.Equal("x", (await processor.Messages.ReadAsync(guard.Token)).Text());
        Assert.False(delivery.IsCompleted);

        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await delivery;
        Assert.True(b.DseStateObject.CommittedVersion >= 1);
    }

    [Fact]
    public async Task Receive_MalformedHeader_ThrowsAndChangesNothing()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        await using var b = await new DarqTestStorage().OpenAsync(General("b", 2, coordinator));
        long tail = b.TailAddress;

        await Assert.ThrowsAsync<DseHeaderFormatException>(async () =>
            await b.ReceiveSpeculativeAsync(new DarqDelivery("a", 1, "b", "x".Bytes()) { DseHeader = new byte[] { 1, 2, 3 } }, guard.Token));

        Assert.Equal(tail, b.TailAddress);
        Assert.Equal(0, b.UnconsumedCount);
        Assert.False((await b.ReceiveAsync(new DarqDelivery("a", 1, "b", "x".Bytes()), guard.Token)).IsDuplicate);
    }

    [Fact]
    public async Task Open_GeneralWithoutCoordinator_ThrowsNamingTheOption()
    {
        var storage = new DarqTestStorage();
        var error = await Assert.ThrowsAsync<ArgumentException>(() => storage.OpenAsync(o =>
        {
            o.Speculation = DarqSpeculationMode.General;
            o.Dse = Dse(1);
        }));

        Assert.Equal("Coordinator", error.ParamName);
        Assert.Contains("DarqOptions.Coordinator", error.Message, StringComparison.Ordinal);
    }
}
