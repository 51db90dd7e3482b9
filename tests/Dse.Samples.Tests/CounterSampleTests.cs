using Dse.Samples.Counter;

namespace Dse.Samples.Tests;

public class CounterSampleTests
{
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task HandleAsync_SequentialRequests_EveryServiceAgreesWithWhatClientsSaw(bool speculative)
    {
        await using var app = await CounterApp.StartAsync(new CounterAppOptions { Speculative = speculative, WriteLatency = TimeSpan.FromMilliseconds(1) });

        var seen = new List<long>();
        for (int i = 0; i < 10; i++)
        {
            seen.Add(await app.Frontend.HandleAsync(i));
        }

        Assert.Equal(Enumerable.Range(1, 10).Select(i => (long)i), seen);
        Assert.Equal(10, app.Counter.Value);
        Assert.Equal(Enumerable.Range(0, 10).Select(i => $"request {i} -> {i + 1}"), app.Logging.Entries);
        Assert.Equal(10, app.Frontend.Completed);

        // Barriers passed, so what the clients saw is recoverable everywhere.
        Assert.True(app.Counter.CommittedVersion > 0);
        Assert.True(app.Logging.CommittedVersion > 0);
    }

    [Fact]
    public async Task HandleAsync_ConcurrentClients_CountsEveryRequestOnce()
    {
        await using var app = await CounterApp.StartAsync(new CounterAppOptions { WriteLatency = TimeSpan.FromMilliseconds(1) });

        var values = await Task.WhenAll(Enumerable.Range(0, 40).Select(i => app.Frontend.HandleAsync(i)));

        Assert.Equal(Enumerable.Range(1, 40).Select(i => (long)i), values.Order());
        Assert.Equal(40, app.Logging.Entries.Count);
    }

    [Fact]
    public async Task StartAsync_LocalFiles_RecoverAfterRestart()
    {
        var dir = Directory.CreateTempSubdirectory("dse-counter-");
        try
        {
            var options = new CounterAppOptions { DataDirectory = dir.FullName, WriteLatency = TimeSpan.Zero };
            await using (var app = await CounterApp.StartAsync(options))
            {
                for (int i = 0; i < 5; i++)
                {
                    await app.Frontend.HandleAsync(i);
                }
            }

            // A new process on the same files: everything a client saw is still there.
            await using var restarted = await CounterApp.StartAsync(options);
            Assert.Equal(5, restarted.Counter.Value);
            Assert.Equal(5, restarted.Logging.Entries.Count);
            Assert.Equal(6, await restarted.Frontend.HandleAsync(5));
        }
        finally
        {
            dir.Delete(recursive: true);
        }
    }
}
