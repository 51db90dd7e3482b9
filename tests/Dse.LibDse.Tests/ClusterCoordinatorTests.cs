namespace Dse.Tests;

public class ClusterCoordinatorTests
{
    private static ConnectRequest Request(long id, params VersionReport[] versions) => new(id, versions);

    [Fact]
    public async Task ReportPersisted_UnknownParticipant_ThrowsAndChangesNothing()
    {
        var c = new ClusterCoordinator();
        long epoch = c.State.Epoch;

        var ex = await Assert.ThrowsAsync<DseCoordinatorException>(() => c.ReportPersistedAsync(9, new VersionReport(1, 0, [])).AsTask());

        Assert.Contains("9", ex.Message, StringComparison.Ordinal);
        Assert.Equal(epoch, c.State.Epoch);
    }

    [Fact]
    public async Task ReportPersisted_WorldLineFromTheFuture_Throws()
    {
        var c = new ClusterCoordinator();
        await c.ConnectAsync(Request(1));

        var ex = await Assert.ThrowsAsync<DseCoordinatorException>(() => c.ReportPersistedAsync(1, new VersionReport(1, 5, [])).AsTask());
        Assert.Contains("world-line 5", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task ReportPersisted_VersionZero_Throws()
    {
        var c = new ClusterCoordinator();
        await c.ConnectAsync(Request(1));
        await Assert.ThrowsAsync<DseCoordinatorException>(() => c.ReportPersistedAsync(1, new VersionReport(0, 0, [])).AsTask());
    }

    [Fact]
    public async Task Connect_VersionsNotAscending_ThrowsAndRegistersNothing()
    {
        var c = new ClusterCoordinator();
        await Assert.ThrowsAsync<DseCoordinatorException>(() => c.ConnectAsync(Request(1, new(2, 0, []), new(1, 0, []))).AsTask());
        await Assert.ThrowsAsync<DseCoordinatorException>(() => c.ReportPersistedAsync(1, new VersionReport(1, 0, [])).AsTask());
    }

    [Fact]
    public async Task ReportPersisted_StaleLineage_IsRefusedAndChangesNothing()
    {
        var c = new ClusterCoordinator();
        await c.ConnectAsync(Request(1));
        await c.ConnectAsync(Request(2));
        await c.ConnectAsync(Request(1));   // restart: world-line 1, cut of 2 is 0
        var before = c.State;

        var outcome = await c.ReportPersistedAsync(2, new VersionReport(4, 0, []));

        Assert.Equal(ReportOutcome.Stale, outcome);
        Assert.Equal(before.Epoch, c.State.Epoch);
        Assert.Equal(0, c.State.CommittedVersion(2));
    }

    [Fact]
    public async Task ReportPersisted_SameVersionTwice_IsDuplicate()
    {
        var c = new ClusterCoordinator();
        await c.ConnectAsync(Request(1));
        Assert.Equal(ReportOutcome.Accepted, await c.ReportPersistedAsync(1, new VersionReport(1, 0, [])));
        Assert.Equal(ReportOutcome.Duplicate, await c.ReportPersistedAsync(1, new VersionReport(1, 0, [])));
    }

    [Fact]
    public async Task AcknowledgeRollback_WorldLineNotDecided_Throws()
    {
        var c = new ClusterCoordinator();
        await c.ConnectAsync(Request(1));
        await Assert.ThrowsAsync<DseCoordinatorException>(() => c.AcknowledgeRollbackAsync(1, 3, 0).AsTask());
    }

    [Fact]
    public async Task WaitForChangeAsync_CompletesWhenBoundaryMoves()
    {
        var c = new ClusterCoordinator();
        await c.ConnectAsync(Request(1));
        long epoch = c.State.Epoch;
        var wait = c.WaitForChangeAsync(epoch).AsTask();
        Assert.False(wait.IsCompleted);

        await c.ReportPersistedAsync(1, new VersionReport(1, 0, []));

        var state = await wait.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(1, state.CommittedVersion(1));
    }

    [Fact]
    public async Task Connect_KnownId_IsARestartWithNewWorldLine()
    {
        var c = new ClusterCoordinator();
        var first = await c.ConnectAsync(Request(1, new VersionReport(1, 0, [])));
        Assert.False(first.IsRestart);
        Assert.Equal(1, first.RestoreVersion);

        var second = await c.ConnectAsync(Request(1, new VersionReport(1, 0, []), new VersionReport(2, 0, [])));

        Assert.True(second.IsRestart);
        Assert.Equal(1, second.WorldLine);
        Assert.Equal(2, second.RestoreVersion);
        Assert.Equal(1, Assert.Single(second.State.Decisions).FailedObjectId);
    }

    [Fact]
    public async Task Connect_RestartListingOldLineage_DropsVersionsAnEarlierDecisionRemoved()
    {
        var c = new ClusterCoordinator();
        await c.ConnectAsync(Request(1));
        await c.ConnectAsync(Request(2));
        await c.ReportPersistedAsync(2, new VersionReport(1, 0, [new Dependency(1, 1)]));

        // 1 restarts: 2's version 1 depended on 1's lost version 1.
        await c.ConnectAsync(Request(1));

        // 2 crashes before applying that decision; its storage still lists version 1 from world-line 0.
        var response = await c.ConnectAsync(Request(2, new VersionReport(1, 0, [new Dependency(1, 1)])));
        Assert.Equal(0, response.RestoreVersion);
        Assert.Equal(2, response.WorldLine);
    }

    [Fact]
    public async Task Connect_ColdStart_RestoresEveryoneToOneConsistentCut()
    {
        // Storage left by a whole-cluster crash: 1's version 2 depends on 2's version 3, which 2 never made durable.
        var c = new ClusterCoordinator(new ClusterCoordinatorOptions { ExpectedParticipants = [1, 2] });
        var first = c.ConnectAsync(Request(1, new VersionReport(1, 0, []), new VersionReport(2, 0, [new Dependency(2, 3)]))).AsTask();
        Assert.False(first.IsCompleted);   // waits for the other expected participant's storage

        var second = await c.ConnectAsync(Request(2, new VersionReport(1, 0, []), new VersionReport(2, 0, [])));
        var firstResponse = await first.WaitAsync(TimeSpan.FromSeconds(30));

        Assert.Equal(1, firstResponse.RestoreVersion);
        Assert.Equal(2, second.RestoreVersion);

        // Recorded as a decision above every stored label: later connects filter against it.
        Assert.Equal(1, firstResponse.WorldLine);
        Assert.Equal(RollbackDecision.ColdStart, Assert.Single(c.State.Decisions).FailedObjectId);
    }

    [Fact]
    public async Task Connect_ColdStartSameIdTwice_LatestListingCountsAndNoRestartDecisionIsMade()
    {
        var c = new ClusterCoordinator(new ClusterCoordinatorOptions { ExpectedParticipants = [1, 2, 3] });
        using (var cts = new CancellationTokenSource())
        {
            var cancelled = c.ConnectAsync(Request(1, new VersionReport(1, 0, [])), cts.Token).AsTask();
            await cts.CancelAsync();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelled);
        }

        var two = c.ConnectAsync(Request(2, new VersionReport(1, 0, [new Dependency(3, 5)]))).AsTask();
        var oneAgain = c.ConnectAsync(Request(1, new VersionReport(1, 0, []), new VersionReport(2, 0, []))).AsTask();
        var oneYetAgain = c.ConnectAsync(Request(1, new VersionReport(1, 0, []), new VersionReport(2, 0, []))).AsTask();
        await Assert.ThrowsAsync<DseCoordinatorException>(() => oneAgain.WaitAsync(TimeSpan.FromSeconds(30)));
        Assert.False(two.IsCompleted);

        var three = await c.ConnectAsync(Request(3, new VersionReport(5, 0, [])));

        Assert.Equal(1, (await two).RestoreVersion);   // 3@5 is there: 2 keeps its version 1
        Assert.Equal(2, (await oneYetAgain).RestoreVersion);
        Assert.Equal(5, three.RestoreVersion);
        Assert.Equal(RollbackDecision.ColdStart, Assert.Single(c.State.Decisions).FailedObjectId);
    }

    [Fact]
    public async Task Connect_ColdStartCancelledJoin_IsUndoneAndWaitedForAgain()
    {
        var c = new ClusterCoordinator(new ClusterCoordinatorOptions { ExpectedParticipants = [1, 2] });
        using (var cts = new CancellationTokenSource())
        {
            var cancelled = c.ConnectAsync(Request(1), cts.Token).AsTask();
            await cts.CancelAsync();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => cancelled);
        }

        var two = c.ConnectAsync(Request(2)).AsTask();
        Assert.False(two.IsCompleted);   // 1 counts as missing again

        await c.ConnectAsync(Request(1));
        await two.WaitAsync(TimeSpan.FromSeconds(30));
    }

    [Fact]
    public async Task Connect_ColdStartReusedVersionNumber_IsNotTakenForTheObservedState()
    {
        // 1's version 4 (world-line 1) observed 2's in-memory version 7; 2 restarted and its world-line 2 reused 7.
        var c = new ClusterCoordinator(new ClusterCoordinatorOptions { ExpectedParticipants = [1, 2] });
        var one = c.ConnectAsync(Request(1, new VersionReport(3, 1, []), new VersionReport(4, 1, [new Dependency(2, 7)]))).AsTask();
        var two = await c.ConnectAsync(Request(2, new VersionReport(5, 1, []), new VersionReport(7, 2, [])));

        Assert.Equal(3, (await one).RestoreVersion);
        Assert.Equal(7, two.RestoreVersion);
        Assert.Equal(3, two.WorldLine);
    }

    [Fact]
    public async Task Connect_ColdStartUnexpectedParticipant_Throws()
    {
        var c = new ClusterCoordinator(new ClusterCoordinatorOptions { ExpectedParticipants = [1, 2] });
        var ex = await Assert.ThrowsAsync<DseCoordinatorException>(() => c.ConnectAsync(Request(9)).AsTask());
        Assert.Contains("not among the expected participants", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Constructor_EmptyExpectedParticipants_ThrowsNamingOption()
    {
        var ex = Assert.Throws<ArgumentException>(() => new ClusterCoordinator(new ClusterCoordinatorOptions { ExpectedParticipants = [] }));
        Assert.Contains("ExpectedParticipants", ex.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Connect_ColdStartObservedVersionPruned_KeepsCommittedState()
    {
        // 1@1 observed 2@1 (both committed, world-line 0); after an unrelated restart 2 persisted 2@2 in world-line 1
        // and pruned 2@1. The later label belongs to a later version, not to a reuse of the observed one.
        var c = new ClusterCoordinator(new ClusterCoordinatorOptions { ExpectedParticipants = [1, 2] });
        var one = c.ConnectAsync(Request(1, new VersionReport(1, 0, [new Dependency(2, 1)]))).AsTask();
        await c.ConnectAsync(Request(2, new VersionReport(2, 1, [])));

        Assert.Equal(1, (await one).RestoreVersion);
    }

    [Fact]
    public async Task Connect_AfterColdStartUnexpectedIdWithStorage_ThrowsAndRegistersNothing()
    {
        var c = new ClusterCoordinator(new ClusterCoordinatorOptions { ExpectedParticipants = [1] });
        await c.ConnectAsync(Request(1));

        var ex = await Assert.ThrowsAsync<DseCoordinatorException>(() => c.ConnectAsync(Request(9, new VersionReport(2, 0, [new Dependency(1, 3)]))).AsTask());
        Assert.Contains("not among the expected participants", ex.Message, StringComparison.Ordinal);

        // An empty newcomer is a genuinely new participant.
        Assert.Equal(0, (await c.ConnectAsync(Request(10))).RestoreVersion);
    }

    [Fact]
    public async Task ReportPersisted_OlderThanRetainedDecisions_IsStale()
    {
        var c = new ClusterCoordinator(new ClusterCoordinatorOptions { MaxRetainedDecisions = 1 });
        await c.ConnectAsync(new ConnectRequest(1, []));
        await c.ConnectAsync(new ConnectRequest(2, []));
        for (int i = 0; i < 3; i++)
        {
            await c.ConnectAsync(new ConnectRequest(1, []));
        }

        Assert.Equal(ReportOutcome.Stale, await c.ReportPersistedAsync(2, new VersionReport(1, 0, [])));
        Assert.Equal(ReportOutcome.Accepted, await c.ReportPersistedAsync(2, new VersionReport(1, 3, [])));
    }
}
