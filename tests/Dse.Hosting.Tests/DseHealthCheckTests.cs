using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Time.Testing;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Hosting;

namespace Dse.Hosting.Tests;

/// <summary>The <c>dse</c> health check through the host's <see cref="HealthCheckService"/>.</summary>
public sealed class DseHealthCheckTests
{
    [Fact]
    public async Task CheckHealth_Connected_Healthy()
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config());
        await host.StartCounterAsync();

        var entry = await CheckAsync(host);

        Assert.Equal(HealthStatus.Healthy, entry.Status);
        Assert.Contains("1 StateObject(s) connected", entry.Description, StringComparison.Ordinal);
        await host.StopAsync();
    }

    [Fact]
    public async Task CheckHealth_CoordinatorDownThenBack_DegradedThenHealthy()
    {
        await using var storage = new CounterStorage();
        var coordinator = new GatedCoordinator();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(), dse => dse.UseCoordinator(coordinator));
        await host.StartAsync();
        await coordinator.RefusedTwice;

        var down = await CheckAsync(host);
        coordinator.Open();
        await host.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync();
        var back = await CheckAsync(host);

        Assert.Equal(HealthStatus.Degraded, down.Status);
        Assert.Contains("The test coordinator is down", down.Description, StringComparison.Ordinal);
        Assert.Equal(HealthStatus.Healthy, back.Status);
        await host.StopAsync();
    }

    [Fact]
    public async Task CheckHealth_StateObjectFaulted_UnhealthyWithItsFault()
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:GroupCommitPeriod", "00:10:00")));
        var counter = await host.StartCounterAsync();
        Assert.Equal(HealthStatus.Healthy, (await CheckAsync(host)).Status);

        storage.Device!.FailPermanently();
        await counter.IncrementAsync();
        // Persist fails at once (the advance throws) or once the write completes; either way the StateObject faults.
        await Record.ExceptionAsync(() => counter.AdvanceVersionAsync().AsTask());

        var fault = await counter.WaitForFaultAsync();
        var entry = await CheckAsync(host);

        Assert.Equal(HealthStatus.Unhealthy, entry.Status);
        Assert.Contains($"StateObject 1 faulted: {fault.Message}", entry.Description, StringComparison.Ordinal);
        await host.StopAsync();
    }

    [Fact]
    public async Task CheckHealth_CoordinatorRecovering_Degraded()
    {
        await using var storage = new CounterStorage();
        var coordinator = new GatedCoordinator { Recovering = true };
        coordinator.Open();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(), dse => dse.UseCoordinator(coordinator));
        await host.StartCounterAsync();

        var entry = await CheckAsync(host);

        Assert.Equal(HealthStatus.Degraded, entry.Status);
        Assert.Contains("recovering from its restart", entry.Description, StringComparison.Ordinal);
        await host.StopAsync();
    }

    [Fact]
    public async Task CheckHealth_PersistedVersionNeverCommits_UnhealthyAfterCommitStallTimeout()
    {
        var time = new FakeTimeProvider();
        var coordinator = new GatedCoordinator { SwallowReports = true };
        coordinator.Open();
        await using var storage = new CounterStorage();
        using var host = await BuildWithClockAsync(storage, time, coordinator);
        var counter = await host.StartCounterAsync();
        await counter.IncrementAsync();
        await counter.AdvanceVersionAsync();

        var first = await CheckAsync(host);
        time.Advance(TimeSpan.FromSeconds(29));
        var before = await CheckAsync(host);
        time.Advance(TimeSpan.FromSeconds(2));
        var after = await CheckAsync(host);

        Assert.Equal(HealthStatus.Healthy, first.Status);
        Assert.Equal(HealthStatus.Healthy, before.Status);
        Assert.Equal(HealthStatus.Unhealthy, after.Status);
        Assert.Contains("StateObject 1 cannot commit: version 2 (world-line 0) has waited 31.0 s to commit (Dse:CommitStallTimeout is 30.0 s)", after.Description, StringComparison.Ordinal);
        await host.StopAsync();
    }

    [Fact]
    public async Task CheckHealth_CommitsFlow_StaysHealthyPastCommitStallTimeout()
    {
        var time = new FakeTimeProvider();
        var coordinator = new GatedCoordinator();
        coordinator.Open();
        await using var storage = new CounterStorage();
        using var host = await BuildWithClockAsync(storage, time, coordinator);
        var counter = await host.StartCounterAsync();

        // Version 1 is persisted but not committed while reports are held: the probe persists version 2 and times it.
        coordinator.HoldReports();
        await counter.IncrementAsync();
        await counter.AdvanceVersionAsync();
        long persisted = counter.CurrentVersion;
        var first = await CheckAsync(host);
        coordinator.ReleaseReports();
        await counter.WaitForCommitAsync(persisted, counter.WorldLine);
        time.Advance(TimeSpan.FromSeconds(31));
        var later = await CheckAsync(host);

        Assert.Equal(HealthStatus.Healthy, first.Status);
        Assert.Equal(HealthStatus.Healthy, later.Status);
        await host.StopAsync();
    }

    [Fact]
    public async Task CheckHealth_CoordinatorRecoveringMeanwhile_ThatTimeDoesNotCountAsAStall()
    {
        var time = new FakeTimeProvider();
        var coordinator = new GatedCoordinator { SwallowReports = true };
        coordinator.Open();
        await using var storage = new CounterStorage();
        using var host = await BuildWithClockAsync(storage, time, coordinator);
        var counter = await host.StartCounterAsync();
        await counter.IncrementAsync();
        await counter.AdvanceVersionAsync();
        Assert.Equal(HealthStatus.Healthy, (await CheckAsync(host)).Status);

        time.Advance(TimeSpan.FromSeconds(20));
        coordinator.Recovering = true;
        var recovering = await CheckAsync(host);
        coordinator.Recovering = false;
        time.Advance(TimeSpan.FromSeconds(20));
        var afterRecovery = await CheckAsync(host);
        time.Advance(TimeSpan.FromSeconds(11));
        var stalled = await CheckAsync(host);

        Assert.Equal(HealthStatus.Degraded, recovering.Status);
        Assert.Equal(HealthStatus.Healthy, afterRecovery.Status);
        Assert.Equal(HealthStatus.Unhealthy, stalled.Status);
        await host.StopAsync();
    }

    [Fact]
    public async Task CheckHealth_CommitStallTimeoutInfinite_NeverReportsAStall()
    {
        var time = new FakeTimeProvider();
        var coordinator = new GatedCoordinator { SwallowReports = true };
        coordinator.Open();
        await using var storage = new CounterStorage();
        using var host = await BuildWithClockAsync(storage, time, coordinator, ("Dse:CommitStallTimeout", "-00:00:00.001"));
        var counter = await host.StartCounterAsync();
        await counter.IncrementAsync();
        await counter.AdvanceVersionAsync();

        await CheckAsync(host);
        time.Advance(TimeSpan.FromHours(2));

        Assert.Equal(HealthStatus.Healthy, (await CheckAsync(host)).Status);
        await host.StopAsync();
    }

    /// <summary>
    /// A counter host on <paramref name="time"/>, without background group commit: only explicit advances persist. Its
    /// stop does not wait for commits (a fake clock never ends that wait).
    /// </summary>
    private static async Task<IHost> BuildWithClockAsync(CounterStorage storage, FakeTimeProvider time, IDseCoordinator? coordinator, params (string Key, string? Value)[] configuration)
    {
        var log = await storage.OpenAsync();
        return TestHost.Build(
            TestHost.Config([("Dse:GroupCommitPeriod", "00:10:00"), ("Dse:ShutdownTimeout", "00:00:00"), .. configuration]),
            dse =>
            {
                dse.AddStateObject((_, options) => new CounterStateObject(options, log));
                if (coordinator is not null)
                {
                    dse.UseCoordinator(coordinator);
                }
            },
            before: services => services.AddSingleton<TimeProvider>(time));
    }

    private static async Task<HealthReportEntry> CheckAsync(IHost host)
    {
        var report = await host.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync();
        return report.Entries[DseBuilderExtensions.HealthCheckName];
    }
}
