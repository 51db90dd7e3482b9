using System.Diagnostics.Metrics;
using Microsoft.Extensions.Time.Testing;

namespace Dse.Tests;

/// <summary>
/// <c>dse.commit.lag</c>: each version handed to Persist records, once the StateObject applies a committed view that
/// covers it, the time since it was handed over on the StateObject's clock. Rolled-back versions and versions persisted
/// while nobody listened record nothing.
/// </summary>
[Collection(MeterIsolation.Name)]
public sealed class CommitLagTests
{
    [Fact]
    public async Task Refresh_VersionCommitted_RecordsTimeFromPersistUntilTheBoundaryWasLearned()
    {
        using var lags = new CommitLags(1);
        var time = new FakeTimeProvider();
        var so = await ConnectAsync(new ClusterCoordinator(), 1, time);

        TestCluster.Send(so, 10);
        await so.AdvanceVersionAsync();
        time.Advance(TimeSpan.FromMilliseconds(40));
        so.Store.CompleteOldest();
        time.Advance(TimeSpan.FromMilliseconds(25));
        Assert.Empty(lags.Values);

        await so.RefreshAsync();

        Assert.Equal(1, so.CommittedVersion);
        Assert.Equal([65.0], lags.Values);
    }

    [Fact]
    public async Task Refresh_BoundaryJumpsOverSeveralVersions_RecordsEachOfThem()
    {
        using var lags = new CommitLags(1);
        var time = new FakeTimeProvider();
        var so = await ConnectAsync(new ClusterCoordinator(), 1, time);

        TestCluster.Send(so, 10);
        await so.AdvanceVersionAsync();
        time.Advance(TimeSpan.FromMilliseconds(10));
        TestCluster.Send(so, 11);
        await so.AdvanceVersionAsync();
        time.Advance(TimeSpan.FromMilliseconds(20));
        so.Store.CompleteOldest();

        await so.RefreshAsync();

        Assert.Equal(2, so.CommittedVersion);
        Assert.Equal([30.0, 20.0], lags.Values);
    }

    [Fact]
    public async Task Refresh_VersionRolledBack_RecordsNothingForIt()
    {
        using var lags = new CommitLags(2);
        var time = new FakeTimeProvider();
        var coordinator = new ClusterCoordinator();
        var a = await ConnectAsync(coordinator, 1, time);
        var b = await ConnectAsync(coordinator, 2, time);
        b.Store.AutoDurable = true;

        // b's version 1 depends on a@1, which a loses in a crash: b restores 0 and version 1 never commits.
        Assert.True(await TestCluster.ReceiveAsync(b, TestCluster.Send(a, 1), 2));
        await a.AdvanceVersionAsync();
        await b.AdvanceVersionAsync();
        a.Store.Crash();
        await a.DisposeAsync();
        await MemoryStateObject.Create(1, a.Store, time: time).ConnectAsync(coordinator);
        time.Advance(TimeSpan.FromMilliseconds(50));
        await b.RefreshAsync();
        Assert.Equal([0L, 0L], b.RestoredVersions);

        // A version after the rollback commits and is the only one timed.
        TestCluster.Send(b, 3);
        await b.AdvanceVersionAsync();
        time.Advance(TimeSpan.FromMilliseconds(7));
        await b.RefreshAsync();

        Assert.True(b.CommittedVersion > 1);
        Assert.Equal([7.0], lags.Values);
    }

    [Fact]
    public async Task Refresh_VersionPersistedWhileNobodyListened_RecordsNothing()
    {
        var time = new FakeTimeProvider();
        var so = await ConnectAsync(new ClusterCoordinator(), 1, time);
        TestCluster.Send(so, 10);
        await so.AdvanceVersionAsync();
        time.Advance(TimeSpan.FromMilliseconds(40));
        so.Store.CompleteOldest();

        // Telemetry was off when the version was handed to Persist: no timestamp was kept, so a listener now sees nothing.
        using var lags = new CommitLags(1);
        await so.RefreshAsync();

        Assert.Equal(1, so.CommittedVersion);
        Assert.Empty(lags.Values);
    }

    [Fact]
    public void OnPersisting_NobodyListens_KeepsNothing()
    {
        var tracker = new CommitLagTracker(1, new FakeTimeProvider());

        tracker.OnPersisting(1, 100);

        Assert.Equal(0, tracker.PendingCount);
    }

    [Fact]
    public void OnCommitted_AcrossTheRingsWrapAndARollback_RecordsEachSurvivingVersionOnce()
    {
        using var lags = new CommitLags(1);
        var time = new FakeTimeProvider();
        var tracker = new CommitLagTracker(1, time);
        long start = time.GetTimestamp();
        for (long v = 1; v <= 20; v++)
        {
            tracker.OnPersisting(v, start);
        }

        tracker.OnCommitted(10, start);
        for (long v = 21; v <= 40; v++)
        {
            tracker.OnPersisting(v, start);
        }

        tracker.DiscardAbove(35);
        Assert.Equal(25, tracker.PendingCount);
        time.Advance(TimeSpan.FromMilliseconds(3));
        tracker.OnCommitted(40, time.GetTimestamp());

        Assert.Equal(0, tracker.PendingCount);
        Assert.Equal(35, lags.Values.Count);
        Assert.Equal(10, lags.Values.Count(v => v == 0));
        Assert.Equal(25, lags.Values.Count(v => v == 3));
    }

    [Fact]
    public void OnPersisting_BeyondTheBound_KeepsAtMostMaxPending()
    {
        using var lags = new CommitLags(1);
        var tracker = new CommitLagTracker(1, new FakeTimeProvider());
        for (long v = 1; v <= CommitLagTracker.MaxPending + 5; v++)
        {
            tracker.OnPersisting(v, 0);
        }

        Assert.Equal(CommitLagTracker.MaxPending, tracker.PendingCount);

        // A commit releases room for versions handed to Persist later.
        tracker.OnCommitted(CommitLagTracker.MaxPending, null);
        tracker.OnPersisting(CommitLagTracker.MaxPending + 10, 0);
        Assert.Equal(1, tracker.PendingCount);
        Assert.Empty(lags.Values);
    }

    private static async Task<MemoryStateObject> ConnectAsync(ClusterCoordinator coordinator, long id, FakeTimeProvider time)
    {
        var so = MemoryStateObject.Create(id, time: time);
        so.Store.AutoDurable = false;
        await so.ConnectAsync(coordinator);
        return so;
    }

    /// <summary>The <c>dse.commit.lag</c> measurements of one StateObject while it is alive.</summary>
    private sealed class CommitLags : IDisposable
    {
        private readonly MeterListener _listener = new();
        private readonly Lock _lock = new();
        private readonly List<double> _values = [];

        public CommitLags(long objectId)
        {
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == DseTelemetry.Name && instrument.Name == "dse.commit.lag")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<double>((_, value, tags, _) =>
            {
                foreach (var tag in tags)
                {
                    if (tag.Key == DseTelemetry.ObjectAttribute && Equals(tag.Value, objectId))
                    {
                        lock (_lock)
                        {
                            _values.Add(value);
                        }
                    }
                }
            });
            _listener.Start();
        }

        public List<double> Values
        {
            get
            {
                lock (_lock)
                {
                    return [.. _values];
                }
            }
        }

        public void Dispose() => _listener.Dispose();
    }
}
