namespace Dse.Darq.Tests;

/// <summary>
/// A DARQ's depths reach the coordinator with its participant's heartbeats: a general-speculation DARQ reports through
/// its own StateObject, any other DARQ through a StateObject it is registered with.
/// </summary>
public sealed class DarqQueueStatisticsTests
{
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task GeneralSpeculation_Opened_ItsStateObjectReportsItsDepths()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var coordinator = new ClusterCoordinator();
        await using var darq = await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("orders", 1, coordinator));

        await darq.EnqueueAsync(7, 1, "a".Bytes(), guard.Token);
        await darq.EnqueueAsync(7, 2, "b".Bytes(), guard.Token);
        var queue = Assert.Single(darq.DseStateObject!.ReadStatistics().Queues);
        Assert.Equal(new QueueStatistics("orders", 2, 0, 0), queue);

        // What the coordinator keeps is what the heartbeat carried.
        await coordinator.HeartbeatAsync(1, darq.DseStateObject.ReadStatistics(), guard.Token);
        var kept = Assert.Single(coordinator.Inspect().Participants).Statistics;
        Assert.Equal(queue, Assert.Single(kept!.Queues));
    }

    [Fact]
    public async Task ReportDepthsThrough_DarqWithoutSpeculation_ReportedUntilDisposed()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var participant = new LoneStateObject();
        await using var darq = await new DarqTestStorage().OpenAsync(o => o.Name = "inbox");
        await darq.EnqueueAsync(3, 1, "a".Bytes(), guard.Token);

        var registration = darq.ReportDepthsThrough(participant);
        Assert.Equal(new QueueStatistics("inbox", 1, 0, 0), Assert.Single(participant.ReadStatistics().Queues));
        Assert.Throws<ArgumentException>(() => darq.ReportDepthsThrough(participant));

        registration.Dispose();
        Assert.Empty(participant.ReadStatistics().Queues);
    }

    /// <summary>A StateObject that is never connected: registration and reading need no coordinator.</summary>
    private sealed class LoneStateObject() : StateObject(new DseOptions { ObjectId = 5, RunBackgroundTasks = false })
    {
        protected override void Persist(long version, ReadOnlyMemory<byte> metadata, PersistCompletion completion) => throw new NotSupportedException();

        protected override ValueTask<ReadOnlyMemory<byte>> RestoreAsync(long version, CancellationToken cancellationToken) => throw new NotSupportedException();

        protected override void Prune(long version) => throw new NotSupportedException();

        protected override ValueTask<IReadOnlyList<PersistedVersion>> ListVersionsAsync(CancellationToken cancellationToken) => throw new NotSupportedException();
    }
}
