using Microsoft.Extensions.Time.Testing;

namespace Dse.Dashboard.Tests;

/// <summary><see cref="ClusterCoordinator.Inspect"/>, the read-only view the dashboard shows.</summary>
public sealed class CoordinatorInspectionDashboardTests
{
    [Fact]
    public async Task Inspect_ShowsEachParticipantsVersionsWorldLineAndHeartbeatAge()
    {
        var time = new FakeTimeProvider();
        await using var coordinator = new ClusterCoordinator(new ClusterCoordinatorOptions { TimeProvider = time });
        await coordinator.ConnectAsync(new ConnectRequest(2, []));
        await coordinator.ConnectAsync(new ConnectRequest(1, []));
        await coordinator.ReportPersistedAsync(1, new VersionReport(1, 0, []));
        await coordinator.ReportPersistedAsync(2, new VersionReport(1, 0, [new Dependency(1, 3)]));
        time.Advance(TimeSpan.FromSeconds(3));
        await coordinator.HeartbeatAsync(1);
        time.Advance(TimeSpan.FromSeconds(2));

        var view = coordinator.Inspect();

        Assert.Equal([1L, 2L], view.Participants.Select(p => p.ObjectId));
        var (one, two) = (view.Participants[0], view.Participants[1]);
        Assert.Equal((1L, 1L, 0), (one.Committed, one.Persisted, one.UncommittedCount));
        Assert.Equal((0L, 1L, 1), (two.Committed, two.Persisted, two.UncommittedCount));
        Assert.Equal(new Dependency(1, 3), Assert.Single(Assert.Single(two.Uncommitted).Dependencies));
        Assert.Equal(TimeSpan.FromSeconds(2), one.SinceHeard);
        Assert.Equal(TimeSpan.FromSeconds(5), two.SinceHeard);
        Assert.Equal(0, one.ReportedWorldLine);
        Assert.False(view.IsRecovering);
        Assert.Null(view.Fault);
        Assert.Empty(view.Decisions);
    }

    [Fact]
    public async Task Inspect_CopiesOnlyTheNewestUncommittedVersions_AndIsNotChangedByLaterReports()
    {
        await using var coordinator = new ClusterCoordinator();
        await coordinator.ConnectAsync(new ConnectRequest(1, []));
        for (long v = 1; v <= 5; v++)
        {
            await coordinator.ReportPersistedAsync(1, new VersionReport(v, 0, [new Dependency(2, 1)]));
        }

        var view = coordinator.Inspect(maxVersionsPerParticipant: 2);
        await coordinator.ReportPersistedAsync(1, new VersionReport(6, 0, []));

        var one = Assert.Single(view.Participants);
        Assert.Equal(5, one.UncommittedCount);
        Assert.Equal([4L, 5L], one.Uncommitted.Select(v => v.Version));
        Assert.Equal(5, one.Persisted);
        Assert.Equal(6, coordinator.Inspect().Participants[0].Persisted);
        Assert.Throws<ArgumentOutOfRangeException>(() => coordinator.Inspect(-1));
    }

    [Fact]
    public async Task Inspect_AfterARestartAndARemoval_ShowsEachDecisionWithWhatEachParticipantLost()
    {
        await using var coordinator = new ClusterCoordinator();
        await coordinator.ConnectAsync(new ConnectRequest(1, []));
        await coordinator.ConnectAsync(new ConnectRequest(2, []));
        await coordinator.ConnectAsync(new ConnectRequest(3, []));
        await coordinator.ReportPersistedAsync(1, new VersionReport(1, 0, []));
        await coordinator.ReportPersistedAsync(1, new VersionReport(2, 0, []));
        await coordinator.ReportPersistedAsync(1, new VersionReport(3, 0, [new Dependency(3, 1)]));
        await coordinator.ReportPersistedAsync(2, new VersionReport(1, 0, [new Dependency(1, 3)]));

        // 1 restarts with version 2 stored: its version 3 is lost, and 2's version 1 that observed it.
        await coordinator.ConnectAsync(new ConnectRequest(1, [new VersionReport(2, 0, [])]));

        // In world-line 1, 1's version 3 observes 3's version 1, which 3 never reports: removing 3 loses it.
        await coordinator.ReportPersistedAsync(1, new VersionReport(3, 1, [new Dependency(3, 1)]));
        Assert.True(await coordinator.RemoveParticipantAsync(3));

        var view = coordinator.Inspect();

        Assert.Equal(2, view.WorldLine);
        var restart = view.Decisions[0];
        Assert.Equal((RollbackReason.Restart, 1L), (restart.Decision.Reason, restart.Decision.FailedObjectId));
        Assert.Equal((2L, 3L), (restart.Decision.CutFor(1), restart.LostThrough(1)));
        Assert.Equal((0L, 1L), (restart.Decision.CutFor(2), restart.LostThrough(2)));
        Assert.Equal(0, restart.LostThrough(3));
        var removal = view.Decisions[1];
        Assert.Equal((RollbackReason.Removed, 3L), (removal.Decision.Reason, removal.Decision.FailedObjectId));
        Assert.Equal((2L, 3L), (removal.Decision.CutFor(1), removal.LostThrough(1)));
        Assert.Equal(0, removal.LostThrough(2));
        var three = view.Participants.Single(p => p.ObjectId == 3);
        Assert.True(three.Removed);
        Assert.Contains("removed by an operator", three.RemovedBecause, StringComparison.Ordinal);
    }
}
