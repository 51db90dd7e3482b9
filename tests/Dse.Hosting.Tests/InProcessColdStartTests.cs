using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace Dse.Hosting.Tests;

/// <summary>The in-process coordinator expects the registered StateObjects, so a restart after a crash restores a consistent cut.</summary>
public sealed class InProcessColdStartTests
{
    // Long enough that nothing is persisted in the background: only the test's explicit advances persist.
    private const string NoGroupCommit = "00:10:00";

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Restart_CrashLostAVersionAnotherStateObjectDependsOn_BothRestoreBeforeIt()
    {
        await using var frontStorage = new CounterStorage();
        await using var backStorage = new CounterStorage();
        using (var crashed = await BuildPairAsync(frontStorage, backStorage))
        {
            var (front, back) = await StartPairAsync(crashed);

            // Back counts one and sends Front a message from that version.
            await back.IncrementAsync();
            await back.StartLocalActionAsync();
            var fromBack = back.EndAction();

            // Front receives it and counts one. It receives before Back persists: a version Front already sees committed
            // would be no dependency at all, and the lost write below is acknowledged, so Back's version could commit.
            Assert.True(await front.StartActionAsync(fromBack));
            await front.IncrementAsync();
            front.EndAction();

            // Back's persist of the version is lost; Front persists its own for real: it depends on Back's lost version.
            backStorage.Device!.CutNow();
            await back.AdvanceVersionAsync();
            await front.AdvanceVersionAsync();
            Assert.Equal((1, 1), (front.Value, back.Value));

            // The crash: no graceful stop persists or commits anything more.
        }

        using var restarted = await BuildPairAsync(frontStorage, backStorage);
        var (restoredFront, restoredBack) = await StartPairAsync(restarted);

        // Each restoring its latest version would give Front 1 and Back 0: a Front that counted what Back never did.
        Assert.Equal((0, 0), (restoredFront.Value, restoredBack.Value));
        await restarted.StopAsync();
    }

    private static async Task<IHost> BuildPairAsync(CounterStorage frontStorage, CounterStorage backStorage)
    {
        var frontLog = await frontStorage.OpenAsync();
        var backLog = await backStorage.OpenAsync();
        return TestHost.Build(TestHost.Config(("Dse:GroupCommitPeriod", NoGroupCommit)), dse => dse
            .AddStateObject((_, options) => new CounterStateObject(options, frontLog))
            .AddStateObject((_, options) => new CounterStateObject(options, backLog), objectId: 2));
    }

    private static async Task<(CounterStateObject Front, CounterStateObject Back)> StartPairAsync(IHost host)
    {
        await host.StartAsync();
        await host.Services.GetRequiredService<IDseReadiness>().WhenReadyAsync();
        var counters = host.Services.GetServices<CounterStateObject>().ToArray();
        return (counters[0], counters[1]);
    }
}
