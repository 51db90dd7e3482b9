using Dse.Testing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace Dse.Hosting.Tests;

/// <summary>Connecting at start, persisting and committing at stop, and several StateObjects in one host.</summary>
public sealed class DseHostedServiceTests
{
    // Long enough that nothing is persisted in the background during a test: only explicit advances and the stop persist.
    private const string NoGroupCommit = "00:10:00";

    [Fact]
    public async Task StartAsync_InProcessCoordinator_ConnectsAndActionsCommit()
    {
        await using var storage = new CounterStorage();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config());
        var counter = await host.StartCounterAsync();

        long version = await counter.IncrementAndCommitAsync();

        Assert.True(counter.IsConnected);
        Assert.True(counter.CommittedVersion >= version);
        Assert.Equal(1, counter.Value);
        await host.StopAsync();
    }

    [Fact]
    public async Task StopAsync_OutstandingAction_PersistsAndCommitsItsVersion()
    {
        await using var storage = new CounterStorage();
        var logs = new LogCapture();
        using (var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:GroupCommitPeriod", NoGroupCommit)), logs: logs))
        {
            var counter = await host.StartCounterAsync();
            await counter.IncrementAsync();
            await counter.IncrementAsync();
            long version = await counter.IncrementAsync();
            Assert.True(counter.CommittedVersion < version);

            await host.StopAsync();

            Assert.True(counter.CommittedVersion >= version, $"committed {counter.CommittedVersion}, expected at least {version}");
            Assert.True(logs.Contains(5006));
            Assert.IsType<ObjectDisposedException>(counter.Fault);
        }

        // A new host over the same storage (a restart) restores what the stop made durable.
        using var restarted = await TestHost.BuildCounterAsync(storage, TestHost.Config());
        var restored = await restarted.StartCounterAsync();

        Assert.Equal(3, restored.Value);
        await restarted.StopAsync();
    }

    [Fact]
    public async Task StopAsync_ServiceRegisteredBeforeAddDseActsWhileStopping_ItsActionIsCommitted()
    {
        await using var storage = new CounterStorage();
        var log = await storage.OpenAsync();
        using var host = TestHost.Build(
            TestHost.Config(("Dse:GroupCommitPeriod", NoGroupCommit)),
            dse => dse.AddStateObject((_, options) => new CounterStateObject(options, log)),
            before: services => services.AddHostedService<IncrementOnStop>());
        var counter = await host.StartCounterAsync();

        // Hosted services stop in reverse registration order, so this one stops after the DSE service's StopAsync.
        await host.StopAsync();

        Assert.Equal(1, counter.Value);
        Assert.True(counter.CommittedVersion >= IncrementOnStop.Version(host), $"committed {counter.CommittedVersion}");
    }

    [Fact]
    public async Task StopAsync_VersionNeverCommits_GivesUpAfterShutdownTimeoutAndDisposes()
    {
        await using var storage = new CounterStorage();
        var logs = new LogCapture();
        var coordinator = new GatedCoordinator { SwallowReports = true };
        coordinator.Open();
        using var host = await TestHost.BuildCounterAsync(
            storage,
            TestHost.Config(("Dse:GroupCommitPeriod", NoGroupCommit), ("Dse:ShutdownTimeout", "00:00:00.200")),
            dse => dse.UseCoordinator(coordinator),
            logs);
        var counter = await host.StartCounterAsync();
        long version = await counter.IncrementAsync();

        await host.StopAsync();

        Assert.True(logs.Contains(5007));
        Assert.True(counter.CommittedVersion < version);
        Assert.NotNull(counter.Fault);
    }

    [Fact]
    public async Task StartAsync_CoordinatorDown_HostStartsAndConnectsOnceItIsBack()
    {
        await using var storage = new CounterStorage();
        var logs = new LogCapture();
        var coordinator = new GatedCoordinator();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(), dse => dse.UseCoordinator(coordinator), logs);
        var readiness = host.Services.GetRequiredService<IDseReadiness>();

        await host.StartAsync();
        await coordinator.RefusedTwice;

        Assert.False(readiness.IsReady);
        Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<CounterStateObject>().TryStartLocalAction());
        Assert.True(logs.Contains(5002));

        coordinator.Open();
        await readiness.WhenReadyAsync();

        Assert.True(readiness.IsReady);
        Assert.True(host.Services.GetRequiredService<CounterStateObject>().IsConnected);
        await host.StopAsync();
    }

    [Fact]
    public async Task StartAsync_CoordinatorRefuses_ReadinessFailsNamingTheStateObject()
    {
        await using var storage = new CounterStorage();
        var coordinator = new GatedCoordinator { Refusal = CoordinatorErrorCode.NotExpected };
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(("Dse:ObjectId", "9")), dse => dse.UseCoordinator(coordinator));
        await host.StartAsync();

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => host.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync());

        Assert.Contains("StateObject 9 cannot connect", error.Message, StringComparison.Ordinal);
        await host.StopAsync();
    }

    [Fact]
    public async Task StopAsync_BeforeCoordinatorCameBack_CancelsReadinessAndStops()
    {
        await using var storage = new CounterStorage();
        var coordinator = new GatedCoordinator();
        using var host = await TestHost.BuildCounterAsync(storage, TestHost.Config(), dse => dse.UseCoordinator(coordinator));
        await host.StartAsync();
        await coordinator.RefusedTwice;

        await host.StopAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => host.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync());
    }

    [Fact]
    public async Task StartAsync_TwoStateObjects_BothConnectWithTheirOwnIds()
    {
        await using var storage = new CounterStorage();
        await using var otherStorage = new CounterStorage();
        var first = await storage.OpenAsync();
        var second = await otherStorage.OpenAsync();
        using var host = TestHost.Build(TestHost.Config(("Dse:ObjectId", "1")), dse => dse
            .AddStateObject((_, options) => new CounterStateObject(options, first))
            .AddStateObject((_, options) => new CounterStateObject(options, second), objectId: 2));
        await host.StartAsync();
        await host.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync();

        var all = host.Services.GetServices<StateObject>().ToArray();
        var counters = host.Services.GetServices<CounterStateObject>().ToArray();

        Assert.Equal([1L, 2L], all.Select(s => s.Id));
        Assert.Equal(all, counters);
        Assert.All(all, s => Assert.True(s.IsConnected));

        // A message from the first StateObject to the second: the dependency commits with both.
        await counters[0].StartLocalActionAsync();
        var header = counters[0].EndAction();
        Assert.True(await counters[1].StartActionAsync(header));
        long version = counters[1].EndAction().Origin.Version;
        await counters[0].AdvanceVersionAsync();
        await counters[1].AdvanceVersionAsync();
        await counters[1].WaitForCommitAsync(version, counters[1].WorldLine);
        await host.StopAsync();
    }

    /// <summary>An application service that runs one action on the StateObject while the host stops.</summary>
    private sealed class IncrementOnStop(CounterStateObject counter) : IHostedService
    {
        public long IncrementedVersion { get; private set; } = -1;

        public static long Version(IHost host) => host.Services.GetServices<IHostedService>().OfType<IncrementOnStop>().Single().IncrementedVersion;

        public Task StartAsync(CancellationToken cancellationToken) => Task.CompletedTask;

        public async Task StopAsync(CancellationToken cancellationToken) => IncrementedVersion = await counter.IncrementAsync();
    }
}
