using System.Diagnostics;
using Dse.Benchmarks.Harness;
using Dse.Darq;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// Co-located processor throughput: a processor steps preloaded 1 KB messages, each step consuming one message and
/// sending one 1 KB OUT message (validated, appended atomically with its completion record). The baseline is one
/// writer enqueueing the same number of 1 KB entries into a raw FasterLog on the same kind of device, with the same
/// 512 MB log memory. A second DARQ measurement steps the same work in batches (<see cref="BatchSize"/> steps per
/// <see cref="DarqProcessor.StepBatchAsync"/>, the messages taken with <see cref="DarqProcessor.ReadAvailableAsync"/>);
/// <c>ratio</c> stays the one-step-at-a-time figure, <c>batch_ratio</c> is the batched one.
/// </summary>
public sealed class DarqStepScenario : IScenario
{
    /// <summary>The most steps per batch in the batched measurement.</summary>
    public const int BatchSize = 64;

    /// <summary>The share of the last timed phase spent in garbage-collection pauses (logged with each round).</summary>
    private static double s_lastPauseShare;

    /// <summary>The process CPU time (all threads: the loop, commits, device writes, GC) per operation of the last timed phase, in microseconds.</summary>
    private static double s_lastCpuMicros;

    public string Name => "darq-step";

    public string Description => "DARQ co-located processor steps/s (consume 1, send 1 KB OUT) / raw FasterLog single-writer enqueues, same device, same run.";

    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        int messages = context.Pick(150_000, 20_000);
        int rounds = context.Pick(3, 1);
        // The preloaded messages fit in the log's memory (for both logs), so steps read them from memory: the scenario
        // measures stepping, not reading a cold log back from disk.
        using var bench = new DarqBench(inMemory: false, memorySize: 1L << 29);
        var raw = new List<double>();
        var steps = new List<double>();
        var batched = new List<double>();
        var rawCpu = new List<double>();
        var stepCpu = new List<double>();
        var batchCpu = new List<double>();
        for (int round = 0; round < rounds; round++)
        {
            raw.Add(await MeasureRawAsync(bench, messages));
            double rawPause = s_lastPauseShare;
            rawCpu.Add(s_lastCpuMicros);
            steps.Add(await MeasureStepsAsync(bench, messages, context.CancellationToken));
            double stepPause = s_lastPauseShare;
            stepCpu.Add(s_lastCpuMicros);
            batched.Add(await MeasureBatchedStepsAsync(bench, messages, context.CancellationToken));
            batchCpu.Add(s_lastCpuMicros);
            context.Log.WriteLine($"darq-step round {round + 1}: raw {raw[^1]:F0}/s, steps {steps[^1]:F0}/s, batched steps {batched[^1]:F0}/s " +
                $"(GC pauses {rawPause:P0} / {stepPause:P0} / {s_lastPauseShare:P0} of each timed phase; " +
                $"CPU {rawCpu[^1]:F2} / {stepCpu[^1]:F2} / {batchCpu[^1]:F2} us per operation)");
        }

        double rawOps = Stats.Median(raw);
        double darqOps = Stats.Median(steps);
        double batchOps = Stats.Median(batched);
        return new ScenarioResults()
            .Add("darq_ops", darqOps, 0)
            .Add("raw_ops", rawOps, 0)
            .Add("ratio", darqOps / rawOps, 3)
            .Add("darq_batch_ops", batchOps, 0)
            .Add("batch_ratio", batchOps / rawOps, 3)
            .Add("batch_size", BatchSize)
            .Add("raw_cpu_us", Stats.Median(rawCpu), 2)
            .Add("step_cpu_us", Stats.Median(stepCpu), 2)
            .Add("batch_cpu_us", Stats.Median(batchCpu), 2)
            .Add("messages", messages)
            .Add("message_bytes", DarqBench.MessageSize);
    }

    private static async Task<double> MeasureRawAsync(DarqBench bench, int messages)
    {
        await using var raw = bench.OpenRaw();
        var payload = DarqBench.Payload();
        var pause = GC.GetTotalPauseDuration();
        var cpu = Environment.CpuUsage.TotalTime;
        var clock = Stopwatch.StartNew();
        for (int i = 0; i < messages; i++)
        {
            await raw.EnqueueAsync(payload);
        }

        var elapsed = clock.Elapsed;
        s_lastPauseShare = (GC.GetTotalPauseDuration() - pause) / elapsed;
        s_lastCpuMicros = (Environment.CpuUsage.TotalTime - cpu).TotalMicroseconds / messages;
        return messages / elapsed.TotalSeconds;
    }

    private static async Task<double> MeasureStepsAsync(DarqBench bench, int messages, CancellationToken cancellationToken)
    {
        await using var darq = await bench.OpenDarqAsync();
        var payload = DarqBench.Payload();
        for (int i = 0; i < messages; i++)
        {
            await darq.EnqueueAsync(payload, cancellationToken);
        }

        await darq.CommitAsync(cancellationToken);
        var processor = await darq.RegisterProcessorAsync(cancellationToken);
        int stepped = 0;
        // One step object reused for every step (DarqStep.Clear), as a processor loop would.
        var step = new DarqStep();
        var pause = GC.GetTotalPauseDuration();
        var cpu = Environment.CpuUsage.TotalTime;
        var clock = Stopwatch.StartNew();
        await foreach (var message in processor.ReadAllAsync(cancellationToken))
        {
            await processor.StepAsync(step.Clear().Consume(message).AddOut("sink", payload), cancellationToken);
            if (++stepped == messages)
            {
                break;
            }
        }

        var elapsed = clock.Elapsed;
        s_lastPauseShare = (GC.GetTotalPauseDuration() - pause) / elapsed;
        s_lastCpuMicros = (Environment.CpuUsage.TotalTime - cpu).TotalMicroseconds / messages;
        return messages / elapsed.TotalSeconds;
    }

    /// <summary>The same steps, taken as they are available, up to <see cref="BatchSize"/> per batch.</summary>
    private static async Task<double> MeasureBatchedStepsAsync(DarqBench bench, int messages, CancellationToken cancellationToken)
    {
        await using var darq = await bench.OpenDarqAsync();
        var payload = DarqBench.Payload();
        for (int i = 0; i < messages; i++)
        {
            await darq.EnqueueAsync(payload, cancellationToken);
        }

        await darq.CommitAsync(cancellationToken);
        var processor = await darq.RegisterProcessorAsync(cancellationToken);
        var available = new List<DarqMessage>(BatchSize);
        var pool = new DarqStep[BatchSize];
        for (int i = 0; i < pool.Length; i++)
        {
            pool[i] = new DarqStep();
        }

        var batch = new List<DarqStep>(BatchSize);
        int stepped = 0;
        var pause = GC.GetTotalPauseDuration();
        var cpu = Environment.CpuUsage.TotalTime;
        var clock = Stopwatch.StartNew();
        while (stepped < messages && await processor.ReadAvailableAsync(available, Math.Min(BatchSize, messages - stepped), cancellationToken) > 0)
        {
            batch.Clear();
            for (int i = 0; i < available.Count; i++)
            {
                batch.Add(pool[i].Clear().Consume(available[i]).AddOut("sink", payload));
            }

            await processor.StepBatchAsync(batch, cancellationToken);
            stepped += available.Count;
            available.Clear();
        }

        var elapsed = clock.Elapsed;
        s_lastPauseShare = (GC.GetTotalPauseDuration() - pause) / elapsed;
        s_lastCpuMicros = (Environment.CpuUsage.TotalTime - cpu).TotalMicroseconds / messages;
        return messages / elapsed.TotalSeconds;
    }
}
