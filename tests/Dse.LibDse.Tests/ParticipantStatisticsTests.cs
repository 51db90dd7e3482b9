using Microsoft.Extensions.Time.Testing;

namespace Dse.Tests;

/// <summary>
/// What a participant reports about itself with its heartbeats (<see cref="ParticipantStatistics"/>), what the
/// coordinator keeps of it (<see cref="ClusterCoordinator.Inspect"/>), and the refusal of statistics that break their
/// rules, which changes nothing.
/// </summary>
public sealed class ParticipantStatisticsTests
{
    private static readonly TimeSpan PastHeartbeat = TimeSpan.FromSeconds(2);

    [Fact]
    public async Task RefreshAsync_HeartbeatDue_CoordinatorKeepsCurrentVersionAndWorldLine()
    {
        var time = new FakeTimeProvider();
        var coordinator = new ClusterCoordinator(new ClusterCoordinatorOptions { TimeProvider = time });
        var so = MemoryStateObject.Create(1, time: time);
        await so.ConnectAsync(coordinator);
        Assert.Null(Participant(coordinator, 1).Statistics);

        TestCluster.Send(so, 10);
        await so.AdvanceVersionAsync();
        time.Advance(PastHeartbeat);
        await so.RefreshAsync();

        var participant = Participant(coordinator, 1);
        var statistics = Assert.IsType<ParticipantStatistics>(participant.Statistics);
        Assert.Equal(so.CurrentVersion, statistics.CurrentVersion);
        Assert.Equal(2, statistics.CurrentVersion);
        Assert.Equal(so.WorldLine, statistics.WorldLine);
        Assert.Equal(TimeSpan.Zero, participant.StatisticsAge);
        Assert.Empty(statistics.Queues);

        time.Advance(TimeSpan.FromMilliseconds(300));
        Assert.Equal(TimeSpan.FromMilliseconds(300), Participant(coordinator, 1).StatisticsAge);
    }

    [Fact]
    public async Task WaitForCommitAsync_Waited_CountedInTheBarrierHistogram()
    {
        var coordinator = new ClusterCoordinator();
        var so = await TestCluster.ConnectAsync(coordinator, 1);
        Assert.Equal(0, so.ReadStatistics().BarrierWaits.Total);

        TestCluster.Send(so, 10);
        long version = so.CurrentVersion;
        await so.AdvanceVersionAsync();
        var wait = so.WaitForCommitAsync(version, so.WorldLine).AsTask();
        so.Store.CompleteOldest();
        await so.RefreshAsync();
        await wait;

        var waits = so.ReadStatistics().BarrierWaits;
        Assert.Equal(1, waits.Total);
        Assert.Equal(waits.UpperBoundsMilliseconds.Count + 1, waits.Counts.Count);
        Assert.True(waits.SumMilliseconds >= 0);
        Assert.NotNull(waits.QuantileUpperBound(0.5));
        Assert.Null(ParticipantStatistics.Problem(so.ReadStatistics()));
    }

    [Fact]
    public async Task RegisterQueue_Registered_ReportedUnderItsRegisteredNameUntilDisposed()
    {
        var time = new FakeTimeProvider();
        var coordinator = new ClusterCoordinator(new ClusterCoordinatorOptions { TimeProvider = time });
        var so = MemoryStateObject.Create(1, time: time);
        await so.ConnectAsync(coordinator);
        long depth = 3;
        var registration = so.RegisterQueue("orders", () => new QueueStatistics("ignored", depth, 1, 2));
        using var other = so.RegisterQueue("audit", () => throw new InvalidOperationException("the queue is closed"));

        time.Advance(PastHeartbeat);
        await so.RefreshAsync();
        var queue = Assert.Single(Participant(coordinator, 1).Statistics!.Queues);
        Assert.Equal(new QueueStatistics("orders", 3, 1, 2), queue);

        depth = 7;
        registration.Dispose();
        registration.Dispose();
        time.Advance(PastHeartbeat);
        await so.RefreshAsync();
        Assert.Empty(Participant(coordinator, 1).Statistics!.Queues);

        // The name is free again; the first registration's second dispose does not remove the new one.
        using var again = so.RegisterQueue("orders", () => new QueueStatistics("orders", depth, 0, 0));
        registration.Dispose();
        Assert.Equal(7, Assert.Single(so.ReadStatistics().Queues).Unconsumed);
    }

    [Fact]
    public void RegisterQueue_InvalidOrTakenName_ArgumentExceptionNamingTheProblem()
    {
        var so = MemoryStateObject.Create(1);
        static QueueStatistics Read() => new("q", 0, 0, 0);

        Assert.Contains("empty", Assert.Throws<ArgumentException>(() => so.RegisterQueue("", Read)).Message, StringComparison.Ordinal);
        Assert.Contains("129 characters", Assert.Throws<ArgumentException>(() => so.RegisterQueue(new string('q', 129), Read)).Message, StringComparison.Ordinal);
        Assert.Contains("control character", Assert.Throws<ArgumentException>(() => so.RegisterQueue("a\nb", Read)).Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentNullException>(() => so.RegisterQueue("q", null!));

        using var first = so.RegisterQueue("q", Read);
        Assert.Contains("registered already", Assert.Throws<ArgumentException>(() => so.RegisterQueue("q", Read)).Message, StringComparison.Ordinal);

        var more = new List<IDisposable>();
        for (int i = 1; i < ParticipantStatistics.MaxQueues; i++)
        {
            more.Add(so.RegisterQueue($"q{i}", Read));
        }

        Assert.Contains("64 queues", Assert.Throws<ArgumentException>(() => so.RegisterQueue("one-more", Read)).Message, StringComparison.Ordinal);
        Assert.Equal(ParticipantStatistics.MaxQueues, so.ReadStatistics().Queues.Count);
        Assert.Null(ParticipantStatistics.Problem(so.ReadStatistics()));
        more.ForEach(r => r.Dispose());
    }

    public static TheoryData<ParticipantStatistics, string> Broken
    {
        get
        {
            var waits = new BarrierWaitDistribution([1, 10], [0, 0, 0], 0);
            var ok = new ParticipantStatistics(5, 1, waits, [new QueueStatistics("q", 1, 0, 0)]);
            return new()
            {
                { ok with { CurrentVersion = -1 }, "current_version is -1" },
                { ok with { WorldLine = -2 }, "world_line is -2" },
                { ok with { BarrierWaits = null! }, "barrier_waits is missing" },
                { ok with { BarrierWaits = waits with { Counts = [0, 0] } }, "2 counts for 2 bounds" },
                { ok with { BarrierWaits = waits with { UpperBoundsMilliseconds = [10, 1] } }, "upper_bounds_ms[1] is 1" },
                { ok with { BarrierWaits = waits with { UpperBoundsMilliseconds = [double.NaN, 1] } }, "upper_bounds_ms[0] is NaN" },
                { ok with { BarrierWaits = waits with { UpperBoundsMilliseconds = [0, 1] } }, "upper_bounds_ms[0] is 0" },
                { ok with { BarrierWaits = waits with { Counts = [0, -1, 0] } }, "counts[1] is -1" },
                { ok with { BarrierWaits = waits with { Counts = [long.MaxValue, 1, 0] } }, "more than a 64-bit count" },
                { ok with { BarrierWaits = waits with { SumMilliseconds = double.PositiveInfinity } }, "sum_ms is" },
                { ok with { BarrierWaits = new BarrierWaitDistribution([.. Enumerable.Range(1, 33).Select(i => (double)i)], new long[34], 0) }, "33 bucket bounds" },
                { ok with { Queues = [new QueueStatistics("", 0, 0, 0)] }, "queues[0].name is empty" },
                { ok with { Queues = [new QueueStatistics("a\u0007", 0, 0, 0)] }, "control character" },
                { ok with { Queues = [new QueueStatistics("q", 0, 0, 0), new QueueStatistics("q", 0, 0, 0)] }, "appears twice" },
                { ok with { Queues = [new QueueStatistics("q", 0, -1, 0)] }, "negative depth" },
                { ok with { Queues = [.. Enumerable.Range(0, 65).Select(i => new QueueStatistics($"q{i}", 0, 0, 0))] }, "65 entries" },
            };
        }
    }

    [Theory]
    [MemberData(nameof(Broken))]
    public async Task HeartbeatAsync_StatisticsBreakingTheirRules_InvalidRequestAndNothingChanges(ParticipantStatistics statistics, string problem)
    {
        var time = new FakeTimeProvider();
        var coordinator = new ClusterCoordinator(new ClusterCoordinatorOptions { TimeProvider = time });
        await coordinator.ConnectAsync(new ConnectRequest(1, []));
        var kept = new ParticipantStatistics(4, 0, new BarrierWaitDistribution([1], [1, 0], 0.5), []);
        await coordinator.HeartbeatAsync(1, kept);
        time.Advance(TimeSpan.FromSeconds(5));

        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => coordinator.HeartbeatAsync(1, statistics).AsTask());

        Assert.Equal(CoordinatorErrorCode.InvalidRequest, error.Code);
        Assert.Contains(problem, error.Message, StringComparison.Ordinal);
        var participant = Participant(coordinator, 1);
        Assert.Equal(TimeSpan.FromSeconds(5), participant.SinceHeard);
        Assert.Equal(4, participant.Statistics!.CurrentVersion);
        Assert.Equal(kept.BarrierWaits.Counts, participant.Statistics.BarrierWaits.Counts);
    }

    [Fact]
    public async Task HeartbeatAsync_CallerChangesItsListsAfterwards_InspectionUnchanged()
    {
        var coordinator = new ClusterCoordinator();
        await coordinator.ConnectAsync(new ConnectRequest(1, []));
        var counts = new long[] { 1, 2 };
        var queues = new List<QueueStatistics> { new("q", 1, 0, 0) };

        await coordinator.HeartbeatAsync(1, new ParticipantStatistics(3, 0, new BarrierWaitDistribution([1], counts, 2), queues));
        counts[0] = 99;
        queues.Add(new QueueStatistics("r", 1, 0, 0));

        var statistics = Participant(coordinator, 1).Statistics!;
        Assert.Equal([1L, 2L], statistics.BarrierWaits.Counts);
        Assert.Single(statistics.Queues);
    }

    [Fact]
    public async Task HeartbeatAsync_AfterRestartOrRemoval_OldStatisticsGoneAndRemovedRefused()
    {
        var coordinator = new ClusterCoordinator();
        await coordinator.ConnectAsync(new ConnectRequest(1, []));
        await coordinator.ConnectAsync(new ConnectRequest(2, []));
        var statistics = new ParticipantStatistics(3, 0, new BarrierWaitDistribution([1], [0, 0], 0), []);
        await coordinator.HeartbeatAsync(1, statistics);
        await coordinator.HeartbeatAsync(2, statistics);

        // A restart is a new incarnation of the participant: what the old one said no longer describes it.
        await coordinator.ConnectAsync(new ConnectRequest(1, []));
        Assert.Null(Participant(coordinator, 1).Statistics);

        await coordinator.RemoveParticipantAsync(2);
        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => coordinator.HeartbeatAsync(2, statistics with { CurrentVersion = 9 }).AsTask());
        Assert.Equal(CoordinatorErrorCode.Removed, error.Code);
        Assert.Equal(3, Participant(coordinator, 2).Statistics!.CurrentVersion);

        var unknown = await Assert.ThrowsAsync<DseCoordinatorException>(() => coordinator.HeartbeatAsync(5, statistics).AsTask());
        Assert.Equal(CoordinatorErrorCode.UnknownParticipant, unknown.Code);
    }

    [Fact]
    public void QuantileUpperBound_Buckets_UpperBoundOfTheBucketHoldingTheRank()
    {
        var waits = new BarrierWaitDistribution([1, 10, 100], [2, 1, 0, 1], 500);

        Assert.Equal(4, waits.Total);
        Assert.Equal(1, waits.QuantileUpperBound(0));
        Assert.Equal(1, waits.QuantileUpperBound(0.5));
        Assert.Equal(10, waits.QuantileUpperBound(0.75));
        Assert.Equal(double.PositiveInfinity, waits.QuantileUpperBound(0.99));
        Assert.Null(new BarrierWaitDistribution([1], [0, 0], 0).QuantileUpperBound(0.5));
        Assert.Throws<ArgumentOutOfRangeException>(() => waits.QuantileUpperBound(1.5));
    }

    private static ParticipantInspection Participant(ClusterCoordinator coordinator, long id) =>
        Assert.Single(coordinator.Inspect().Participants, p => p.ObjectId == id);
}
