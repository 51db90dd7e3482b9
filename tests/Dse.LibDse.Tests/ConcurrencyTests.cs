namespace Dse.Tests;

[Trait("Category", "Stress")]
public class ConcurrencyTests
{
    [Fact]
    public async Task Actions_WithBackgroundAdvance_NeverOverlapPersist()
    {
        var coordinator = new ClusterCoordinator();
        await using var so = await TestCluster.ConnectAsync(coordinator, 1, background: true);
        var peer = await TestCluster.ConnectAsync(coordinator, 2);

        async Task WorkerAsync(int worker)
        {
            for (int i = 0; i < 1500; i++)
            {
                var header = i % 2 == 0 ? await SendAsync(peer, i) : default;
                if (!await so.StartActionAsync(header))
                {
                    continue;
                }

                Interlocked.Increment(ref so.ActionsInside);
                so.Record((worker * 100_000) + i);
                await Task.Yield();
                Interlocked.Decrement(ref so.ActionsInside);
                so.EndAction();
            }
        }

        async Task AdvancerAsync()
        {
            for (int i = 0; i < 200; i++)
            {
                await so.AdvanceVersionAsync();
                await peer.AdvanceVersionAsync();
            }
        }

        static async Task<DseHeader> SendAsync(MemoryStateObject from, long eventId)
        {
            await from.StartLocalActionAsync();
            from.Record(eventId);
            return from.EndAction();
        }

        await Task.WhenAll(Task.Run(() => WorkerAsync(1)), Task.Run(() => WorkerAsync(2)), Task.Run(AdvancerAsync));

        Assert.Equal(0, so.Violations);
        Assert.True(so.Store.PersistCount >= 200);
        Assert.Equal(3000, so.History.Length);
    }
}
