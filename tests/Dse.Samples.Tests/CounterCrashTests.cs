using Dse.Samples.Counter;

namespace Dse.Samples.Tests;

/// <summary>
/// The running example under real concurrency, timers and devices, with the counter service crashed mid-run: writes
/// in flight are cut, a new incarnation connects, and the cluster rolls back what depended on the lost state.
/// </summary>
[Trait("Category", "Recovery")]
public class CounterCrashTests(Xunit.Abstractions.ITestOutputHelper output)
{
    [Fact]
    public async Task CrashAndRestartCounter_UnderLoad_EveryAnswerSurvivesAndServicesStayConsistent()
    {
        const int Clients = 4;
        const int RequestsPerClient = 30;
        await using var app = await CounterApp.StartAsync(new CounterAppOptions { WriteLatency = TimeSpan.FromMilliseconds(2), GroupCommitPeriod = TimeSpan.FromMilliseconds(5) });

        var answered = new System.Collections.Concurrent.ConcurrentDictionary<int, long>();
        var failures = new System.Collections.Concurrent.ConcurrentBag<Exception>();
        var crashAfter = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        int completed = 0;

        async Task ClientAsync(int client)
        {
            for (int i = 0; i < RequestsPerClient; i++)
            {
                int requestId = (client * 1000) + i;
                try
                {
                    answered[requestId] = await app.Frontend.HandleAsync(requestId);
                }
                catch (Exception ex) when (ex is DseRolledBackException or DseFaultedException)
                {
                    // The request touched state the crash lost: the client gets an error, never a wrong answer.
                    failures.Add(ex);
                }

                if (Interlocked.Increment(ref completed) == Clients * RequestsPerClient / 3)
                {
                    crashAfter.TrySetResult();
                }
            }
        }

        var clients = Enumerable.Range(0, Clients).Select(c => Task.Run(() => ClientAsync(c))).ToArray();
        await crashAfter.Task.WaitAsync(TimeSpan.FromSeconds(60));
        await app.CrashAndRestartCounterAsync();
        await Task.WhenAll(clients).WaitAsync(TimeSpan.FromSeconds(120));

        // After the crash the cluster recovered: later requests are answered.
        long after = await HandleWithRetryAsync(app, 99_999);
        Assert.True(after > 0);
        Assert.Equal(1, app.Restarts);

        // Everything a client was told passed a barrier, so it is in the services' state now.
        var entries = app.Logging.Entries.ToHashSet();
        foreach (var (requestId, value) in answered)
        {
            Assert.Contains($"request {requestId} -> {value}", entries);
        }

        // No value was handed out twice, and the counter is at least every value logged.
        Assert.Equal(answered.Count, answered.Values.Distinct().Count());
        long maxLogged = app.Logging.Entries.Select(e => long.Parse(e[(e.IndexOf("-> ", StringComparison.Ordinal) + 3)..], System.Globalization.CultureInfo.InvariantCulture)).Max();
        Assert.True(app.Counter.Value >= maxLogged, $"counter {app.Counter.Value} below a logged value {maxLogged}");
        Assert.Equal(app.Logging.Entries.Count, app.Logging.Entries.Distinct().Count());
        Assert.True(answered.Count + failures.Count == Clients * RequestsPerClient);
        Assert.Equal(1, app.Coordinator.WorldLine);
        output.WriteLine($"answered {answered.Count}, failed {failures.Count} ({string.Join(", ", failures.GroupBy(f => f.GetType().Name).Select(g => $"{g.Key} {g.Count()}"))}), " +
            $"counter {app.Counter.Value}, log entries {app.Logging.Entries.Count}, decision {app.Coordinator.State.Decisions[0]}");
    }

    [Fact]
    public async Task CrashEveryService_OneAfterAnother_UnderLoad_AnswersSurviveAndStateStaysConsistent()
    {
        const int Clients = 3;
        const int RequestsPerClient = 60;
        string[] crashes = ["counter", "logging", "frontend", "counter"];
        await using var app = await CounterApp.StartAsync(new CounterAppOptions { WriteLatency = TimeSpan.FromMilliseconds(2), GroupCommitPeriod = TimeSpan.FromMilliseconds(5) });

        var answered = new System.Collections.Concurrent.ConcurrentDictionary<int, long>();
        var failures = new System.Collections.Concurrent.ConcurrentBag<Exception>();
        var progress = new SemaphoreSlim(0);

        async Task ClientAsync(int client)
        {
            for (int i = 0; i < RequestsPerClient; i++)
            {
                int requestId = (client * 1000) + i;
                try
                {
                    answered[requestId] = await app.Frontend.HandleAsync(requestId);
                }
                catch (Exception ex) when (ex is DseRolledBackException or DseFaultedException)
                {
                    failures.Add(ex);
                }

                progress.Release();
            }
        }

        var clients = Enumerable.Range(0, Clients).Select(c => Task.Run(() => ClientAsync(c))).ToArray();
        foreach (var service in crashes)
        {
            // Let some requests through between crashes, then crash the next service mid-stream.
            for (int n = 0; n < Clients * RequestsPerClient / (crashes.Length + 1); n++)
            {
                await progress.WaitAsync(TimeSpan.FromSeconds(60));
            }

            await app.CrashAndRestartAsync(service);
        }

        await Task.WhenAll(clients).WaitAsync(TimeSpan.FromSeconds(120));
        Assert.True(await HandleWithRetryAsync(app, 99_999) > 0);

        var entries = app.Logging.Entries.ToHashSet();
        foreach (var (requestId, value) in answered)
        {
            Assert.Contains($"request {requestId} -> {value}", entries);
        }

        Assert.Equal(answered.Count, answered.Values.Distinct().Count());
        Assert.Equal(app.Logging.Entries.Count, entries.Count);
        long maxLogged = app.Logging.Entries.Select(e => long.Parse(e[(e.IndexOf("-> ", StringComparison.Ordinal) + 3)..], System.Globalization.CultureInfo.InvariantCulture)).Max();
        Assert.True(app.Counter.Value >= maxLogged, $"counter {app.Counter.Value} below a logged value {maxLogged}");
        Assert.True(app.Frontend.Completed >= answered.Count, $"the frontend recorded {app.Frontend.Completed} completions for {answered.Count} answers");
        Assert.Equal(crashes.Length, app.Restarts);
        Assert.Equal(crashes.Length, app.Coordinator.WorldLine);
        output.WriteLine($"answered {answered.Count}, failed {failures.Count}, counter {app.Counter.Value}, log entries {entries.Count}, frontend completed {app.Frontend.Completed}, world-line {app.Coordinator.WorldLine}");
    }

    /// <summary>
    /// What a client does after an error: the frontend may still be applying a rollback that removes the state the
    /// request started from, so it catches up and the client tries again.
    /// </summary>
    private static async Task<long> HandleWithRetryAsync(CounterApp app, int requestId)
    {
        for (int attempt = 1; ; attempt++)
        {
            try
            {
                return await app.Frontend.HandleAsync(requestId);
            }
            catch (Exception ex) when (ex is DseRolledBackException or DseFaultedException && attempt < 20)
            {
                await app.Frontend.RefreshAsync();
            }
        }
    }
}
