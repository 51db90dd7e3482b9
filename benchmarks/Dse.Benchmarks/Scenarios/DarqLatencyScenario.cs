using System.Diagnostics;
using Dse.Benchmarks.Harness;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// DARQ latency on a local-file device with a 5 ms group commit: how long an enqueue takes to be appended (and
/// acknowledged as such), and how long until it is durable. Four closed-loop producers, each waiting for its message's
/// commit before the next, so messages arrive throughout the commit interval.
/// </summary>
public sealed class DarqLatencyScenario : IScenario
{
    private const int Producers = 4;

    public string Name => "darq-latency";

    public string Description => "DARQ enqueue and commit latency (p50, p99), 1 KB, local file, 5 ms group commit.";

    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var run = context.Pick(TimeSpan.FromSeconds(5), TimeSpan.FromSeconds(1));
        var ct = context.CancellationToken;
        using var bench = new DarqBench(inMemory: false);
        (double[] Enqueue, double[] Commit) darq;
        await using (var log = await bench.OpenDarqAsync())
        {
            darq = await MeasureAsync(run, producer =>
            {
                var payload = DarqBench.Payload();
                long sequence = 0;
                return async () =>
                {
                    var sent = await log.EnqueueAsync(producer + 1, ++sequence, payload, ct);
                    return () => log.WaitForCommitAsync(sent.DurableAt, ct);
                };
            }, ct);
        }

        // The baseline in the same run: raw FasterLog on the same kind of device with the same group commit.
        (double[] Enqueue, double[] Commit) raw;
        await using (var log = bench.OpenRaw())
        {
            raw = await MeasureAsync(run, _ =>
            {
                var payload = DarqBench.Payload();
                return async () =>
                {
                    long address = await log.EnqueueAsync(payload);
                    return () => log.Log.WaitForCommitAsync(address + 1, token: ct);
                };
            }, ct);
        }

        context.Log.WriteLine($"darq-latency: {darq.Commit.Length} DARQ messages, {raw.Commit.Length} raw");
        return new ScenarioResults()
            .Add("enqueue_p50_ms", Stats.Percentile(darq.Enqueue, 0.5), 4)
            .Add("enqueue_p99_ms", Stats.Percentile(darq.Enqueue, 0.99), 4)
            .Add("commit_p50_ms", Stats.Percentile(darq.Commit, 0.5), 3)
            .Add("commit_p99_ms", Stats.Percentile(darq.Commit, 0.99), 3)
            .Add("raw_enqueue_p50_ms", Stats.Percentile(raw.Enqueue, 0.5), 4)
            .Add("raw_commit_p50_ms", Stats.Percentile(raw.Commit, 0.5), 3)
            .Add("raw_commit_p99_ms", Stats.Percentile(raw.Commit, 0.99), 3)
            .Add("messages", darq.Commit.Length)
            .Add("commit_interval_ms", (long)DarqBench.CommitInterval.TotalMilliseconds);
    }

    /// <summary>
    /// Runs closed-loop producers: each enqueue returns how to wait for its commit. Returns the sorted enqueue and
    /// enqueue-to-durable latencies after a warm-up.
    /// </summary>
    private static async Task<(double[] Enqueue, double[] Commit)> MeasureAsync(TimeSpan run, Func<int, Func<ValueTask<Func<ValueTask>>>> createProducer, CancellationToken cancellationToken)
    {
        var enqueue = new List<double>[Producers];
        var commit = new List<double>[Producers];
        long warmupUntil = Stopwatch.GetTimestamp() + (long)(0.3 * Stopwatch.Frequency);
        long until = warmupUntil + (long)(run.TotalSeconds * Stopwatch.Frequency);
        var loops = new Task[Producers];
        for (int p = 0; p < Producers; p++)
        {
            int producer = p;
            enqueue[p] = [];
            commit[p] = [];
            var send = createProducer(p);
            loops[p] = Task.Run(async () =>
            {
                while (Stopwatch.GetTimestamp() < until)
                {
                    long start = Stopwatch.GetTimestamp();
                    var waitForCommit = await send();
                    long appended = Stopwatch.GetTimestamp();
                    await waitForCommit();
                    long durable = Stopwatch.GetTimestamp();
                    if (start > warmupUntil)
                    {
                        enqueue[producer].Add(Stopwatch.GetElapsedTime(start, appended).TotalMilliseconds);
                        commit[producer].Add(Stopwatch.GetElapsedTime(start, durable).TotalMilliseconds);
                    }
                }
            }, cancellationToken);
        }

        await Task.WhenAll(loops);
        return ([.. enqueue.SelectMany(l => l).Order()], [.. commit.SelectMany(l => l).Order()]);
    }
}
