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
        long after = await app.Frontend.HandleAsync(99_999);
        Assert.True(after > 0);
        Assert.Equal(1, app.CounterRestarts);

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
}
