namespace Dse.Tests;

public class SthreadTests
{
    [Fact]
    public async Task BarrierAsync_CompletesOnlyOnceObservedStateIsRecoverable()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        a.Store.AutoDurable = false;
        Assert.True(a.TryStartLocalAction());
        a.Record(1);
        var sthread = a.Detach();

        Assert.Equal(SthreadStatus.Pending, sthread.TryBarrier());
        var barrier = sthread.BarrierAsync().AsTask();
        await a.AdvanceVersionAsync();
        await a.RefreshAsync();
        Assert.False(barrier.IsCompleted);

        a.Store.CompleteOldest();
        await a.RefreshAsync();
        await barrier.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(0, sthread.Dependencies.Length);
    }

    [Fact]
    public async Task BarrierAsync_ObservedStateRolledBack_Throws()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        a.Store.AutoDurable = false;
        Assert.True(await b.StartActionAsync(TestCluster.Send(a, 1)));
        var sthread = b.Detach();
        var barrier = sthread.BarrierAsync().AsTask();

        await a.AdvanceVersionAsync();
        a.Store.Crash();
        await a.DisposeAsync();
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(coordinator);
        await b.RefreshAsync();

        var ex = await Assert.ThrowsAsync<DseRolledBackException>(() => barrier.WaitAsync(TimeSpan.FromSeconds(30)));
        Assert.Equal(1, ex.WorldLine);
        Assert.True(sthread.IsRolledBack);
        Assert.False(await b.MergeAsync(sthread));
        Assert.Equal(StartActionStatus.Discard, b.TryMerge(sthread));
        Assert.Throws<DseRolledBackException>(() => sthread.Send());
    }

    [Fact]
    public async Task Sthread_SurvivingDecision_MovesToNewWorldLineAndStaysUsable()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        Assert.True(b.TryStartLocalAction());
        var sthread = b.Detach();
        await b.AdvanceVersionAsync();

        await a.DisposeAsync();
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(coordinator);
        await b.RefreshAsync();

        Assert.False(sthread.IsRolledBack);
        Assert.Equal(1, sthread.WorldLine);
        Assert.Equal(1, sthread.Send().WorldLine);
        Assert.True(await b.MergeAsync(sthread));
        b.EndAction();
    }

    [Fact]
    public async Task Sthread_OwnerKeptInMemoryStateThroughUnrelatedRollback_SurvivesAndItsBarrierPasses()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        Assert.True(b.TryStartLocalAction());
        b.Record(1);
        var sthread = b.Detach();   // observed b's in-memory version 1, which no decision's cut can cover

        await a.DisposeAsync();
        await MemoryStateObject.Create(1, a.Store).ConnectAsync(coordinator);
        await b.RefreshAsync();
        Assert.Equal(0, coordinator.State.Decisions[0].CutFor(2));
        Assert.Equal([0L], b.RestoredVersions);   // b kept its state

        Assert.False(sthread.IsRolledBack);
        Assert.Equal(SthreadStatus.Pending, sthread.TryBarrier());
        await b.AdvanceVersionAsync();
        await b.RefreshAsync();
        Assert.Equal(SthreadStatus.Completed, sthread.TryBarrier());
    }

    [Fact]
    public async Task Merge_CarriesDependenciesTheSthreadReceived()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        var c = await TestCluster.ConnectAsync(coordinator, 3);
        await c.AdvanceVersionAsync();
        await c.AdvanceVersionAsync();
        Assert.True(b.TryStartLocalAction());
        var sthread = b.Detach();

        Assert.Equal(SthreadStatus.Completed, sthread.TryReceive(TestCluster.Send(a, 1)));
        Assert.True(await sthread.ReceiveAsync(TestCluster.Send(c, 2)));
        var sent = sthread.Send();
        Assert.Equal([new Dependency(2, 1), new Dependency(1, 1), new Dependency(3, 3)], sent.Dependencies.ToArray());

        // Merging needs b at version 3 or later first (commit ordering), then records a@1 and c@3.
        Assert.True(await b.MergeAsync(sthread));
        b.EndAction();
        long mergedInto = b.CurrentVersion;
        await b.AdvanceVersionAsync();
        var report = VersionMetadata.Decode(mergedInto, b.Store.Durable[mergedInto].Metadata);
        Assert.Equal([new Dependency(1, 1), new Dependency(3, 3)], report.Dependencies);
    }

    [Fact]
    public async Task TryReceive_MessageFromLowerWorldLine_IsDiscarded()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        var old = TestCluster.Send(a, 1);
        await a.DisposeAsync();
        var a2 = MemoryStateObject.Create(1, a.Store);
        await a2.ConnectAsync(coordinator);
        await b.RefreshAsync();
        Assert.True(b.TryStartLocalAction());
        var sthread = b.Detach();

        Assert.Equal(SthreadStatus.Discard, sthread.TryReceive(old));
        Assert.False(await sthread.ReceiveAsync(old));
        Assert.Equal(SthreadStatus.Completed, sthread.TryReceive(TestCluster.Send(a2, 2)));
    }

    [Fact]
    public async Task TryReceive_MessageFromHigherWorldLine_IsPendingUntilOwnerCatchesUp()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        Assert.True(b.TryStartLocalAction());
        var sthread = b.Detach();
        await b.AdvanceVersionAsync();
        await a.DisposeAsync();
        var a2 = MemoryStateObject.Create(1, a.Store);
        await a2.ConnectAsync(coordinator);
        var fromFuture = TestCluster.Send(a2, 2);

        Assert.Equal(SthreadStatus.Pending, sthread.TryReceive(fromFuture));
        await b.RefreshAsync();
        Assert.Equal(SthreadStatus.Completed, sthread.TryReceive(fromFuture));
    }

    [Fact]
    public async Task MergeAsync_SthreadOfAnotherObject_ThrowsNamingBoth()
    {
        var coordinator = new ClusterCoordinator();
        var a = await TestCluster.ConnectAsync(coordinator, 1);
        var b = await TestCluster.ConnectAsync(coordinator, 2);
        Assert.True(a.TryStartLocalAction());
        var sthread = a.Detach();

        var ex = await Assert.ThrowsAsync<ArgumentException>(() => b.MergeAsync(sthread).AsTask());
        Assert.Contains("StateObject 1", ex.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentException>(() => b.TryMerge(sthread));
    }
}
