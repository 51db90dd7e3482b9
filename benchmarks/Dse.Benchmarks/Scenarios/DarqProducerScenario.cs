using System.Diagnostics;
using Dse.Benchmarks.Harness;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// DARQ producer throughput against raw FasterLog enqueues on the same kind of device, in the same run: 1 KB messages,
/// one producer per core, deduplication on (every DARQ enqueue carries a producer id and sequence number and is
/// validated), both logs committed every 5 ms. Rounds alternate raw and DARQ; the medians are reported.
/// </summary>
public sealed class DarqProducerScenario : IScenario
{
    public string Name => "darq-producer";

    public string Description => "DARQ enqueue throughput (1 KB, dedup on) / raw FasterLog enqueue, same device, same run (local file and memory).";

    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var run = context.Pick(TimeSpan.FromSeconds(2), TimeSpan.FromMilliseconds(500));
        int rounds = context.Pick(3, 1);
        int producers = Math.Max(2, Environment.ProcessorCount);
        var results = new ScenarioResults();
        foreach (bool inMemory in new[] { false, true })
        {
            using var bench = new DarqBench(inMemory);
            var raw = new List<double>();
            var darq = new List<double>();
            for (int round = 0; round < rounds; round++)
            {
                raw.Add(await MeasureRawAsync(bench, producers, run, context.CancellationToken));
                darq.Add(await MeasureDarqAsync(bench, producers, run, context.CancellationToken));
                context.Log.WriteLine($"darq-producer {bench.DeviceKind} round {round + 1}: raw {raw[^1]:F0}/s, darq {darq[^1]:F0}/s");
            }

            string suffix = inMemory ? "_memory" : string.Empty;
            double rawOps = Stats.Median(raw);
            double darqOps = Stats.Median(darq);
            results.Add("darq_ops" + suffix, darqOps, 0).Add("raw_ops" + suffix, rawOps, 0).Add("ratio" + suffix, darqOps / rawOps, 3);
        }

        return results.Add("message_bytes", DarqBench.MessageSize).Add("producers", producers);
    }

    private static async Task<double> MeasureRawAsync(DarqBench bench, int producers, TimeSpan run, CancellationToken cancellationToken)
    {
        await using var raw = bench.OpenRaw();
        return await MeasureAsync(producers, run, _ =>
        {
            var payload = DarqBench.Payload();
            return async () => await raw.EnqueueAsync(payload);
        }, cancellationToken);
    }

    private static async Task<double> MeasureDarqAsync(DarqBench bench, int producers, TimeSpan run, CancellationToken cancellationToken)
    {
        await using var darq = await bench.OpenDarqAsync();
        return await MeasureAsync(producers, run, producer =>
        {
            var payload = DarqBench.Payload();
            long sequence = 0;
            return async () => await darq.EnqueueAsync(producer + 1, ++sequence, payload);
        }, cancellationToken);
    }

    /// <summary>Runs one closed loop per producer for a warm-up and then <paramref name="run"/>; returns operations per second.</summary>
    internal static async Task<double> MeasureAsync(int producers, TimeSpan run, Func<int, Func<ValueTask>> createProducer, CancellationToken cancellationToken)
    {
        var warmup = TimeSpan.FromMilliseconds(300);
        long counted = 0;
        int measuring = 0;
        int stop = 0;
        var loops = new Task[producers];
        for (int p = 0; p < producers; p++)
        {
            var operation = createProducer(p);
            loops[p] = Task.Run(async () =>
            {
                long local = 0;
                while (Volatile.Read(ref stop) == 0)
                {
                    await operation();
                    if (Volatile.Read(ref measuring) == 1)
                    {
                        local++;
                    }
                }

                Interlocked.Add(ref counted, local);
            }, cancellationToken);
        }

        await Task.Delay(warmup, cancellationToken);
        var clock = Stopwatch.StartNew();
        Volatile.Write(ref measuring, 1);
        await Task.Delay(run, cancellationToken);
        Volatile.Write(ref measuring, 0);
        double elapsed = clock.Elapsed.TotalSeconds;
        Volatile.Write(ref stop, 1);
        await Task.WhenAll(loops);
        return counted / elapsed;
    }
}
