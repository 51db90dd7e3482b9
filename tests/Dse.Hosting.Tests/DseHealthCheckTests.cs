using Microsoft.Extensions.DependencyInjection;
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

    private static async Task<HealthReportEntry> CheckAsync(IHost host)
    {
        var report = await host.Services.GetRequiredService<HealthCheckService>().CheckHealthAsync();
        return report.Entries[DseBuilderExtensions.HealthCheckName];
    }
}
