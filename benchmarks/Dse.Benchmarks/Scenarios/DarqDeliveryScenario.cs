using System.Diagnostics;
using Dse.Benchmarks.Harness;
using Dse.Darq;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// OUT delivery between two co-located DARQs on local files, each with a 5 ms group commit. Throughput: a source holding
/// committed OUT messages to one destination delivers them until the last is acknowledged (durable at the destination),
/// in batches of <see cref="DarqOptions.DeliveryBatchSize"/> 64 with up to <see cref="DarqOptions.DeliveryWindow"/> 32
/// batches in flight: 100-byte messages (<c>batched_msgs_per_s</c>, the target key) and 1 KB ones
/// (<c>batched_1k_msgs_per_s</c>); the same 100-byte batches one at a time (<c>unpipelined_msgs_per_s</c>, window 1) and
/// messages one per delivery (<c>single_msgs_per_s</c>); 1 KB batches read back from the log (<c>spilled_msgs_per_s</c>:
/// no OUT payload in memory and a log memory of <see cref="SpilledLogMemory"/>) and behind <see cref="Backlog"/> older
/// messages to a destination that does not exist (<c>backlogged_msgs_per_s</c>). Latency: a source stepping 100-byte
/// messages at a steady <see cref="PacedRate"/> per second, from each sampled message's step to its acknowledgement
/// (<c>latency_p50_ms</c>, <c>latency_p99_ms</c>).
/// </summary>
public sealed class DarqDeliveryScenario : IScenario
{
    /// <summary>The spilled variant's source log memory: a small part of the backlog, the rest on the device.</summary>
    public const long SpilledLogMemory = 1L << 23;

    /// <summary>The backlogged variant's messages to a destination that is down, stepped before the measured ones.</summary>
    public const int Backlog = 200_000;

    /// <summary>The payload of the target key's messages, in bytes.</summary>
    public const int SmallMessage = 100;

    /// <summary>Messages per second the latency phase steps (well below the throughput, so it measures delivery, not a queue).</summary>
    public const int PacedRate = 20_000;

    /// <summary>Every this-many-th message of the latency phase is timed.</summary>
    private const int LatencySample = 64;

    private const int BatchSize = 64;

    public string Name => "darq-delivery";

    public string Description => "DARQ OUT delivery messages/s between two co-located DARQs (local files, 5 ms group commit): 100-byte and 1 KB messages in batches of 64, a window of batches in flight vs one, read back from the log, behind a backlog; and latency at a steady rate.";

    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var token = context.CancellationToken;
        int messages = context.Pick(50_000, 3_000);
        int singleMessages = context.Pick(5_000, 300);
        int backlog = context.Pick(Backlog, Backlog / 20);
        int rounds = context.Pick(3, 1);
        int window = new DarqOptions().DeliveryWindow;
        using var bench = new DarqBench(inMemory: false, memorySize: 1L << 27);
        var small = DarqBench.Payload(SmallMessage);
        var large = DarqBench.Payload();
        var batched = new List<double>();
        var batched1k = new List<double>();
        var unpipelined = new List<double>();
        var single = new List<double>();
        var spilled = new List<double>();
        var backlogged = new List<double>();
        for (int round = 0; round < rounds; round++)
        {
            batched.Add(await MeasureAsync(bench, new Variant(messages, small, BatchSize, window), token));
            batched1k.Add(await MeasureAsync(bench, new Variant(messages, large, BatchSize, window), token));
            unpipelined.Add(await MeasureAsync(bench, new Variant(messages, small, BatchSize, Window: 1), token));
            single.Add(await MeasureAsync(bench, new Variant(singleMessages, small, BatchSize: 1, window), token));
            spilled.Add(await MeasureAsync(bench, new Variant(messages, large, BatchSize, window, Spill: true), token));
            backlogged.Add(await MeasureAsync(bench, new Variant(messages, large, BatchSize, window, Backlog: backlog), token));
            context.Log.WriteLine($"darq-delivery round {round + 1}: 100 B batches of {BatchSize}, window {window}: {batched[^1]:F0}/s; 1 KB {batched1k[^1]:F0}/s; " +
                $"window 1 {unpipelined[^1]:F0}/s; one per delivery {single[^1]:F0}/s; 1 KB read back from the log {spilled[^1]:F0}/s; " +
                $"1 KB behind a backlog to a destination that is down {backlogged[^1]:F0}/s");
        }

        var latencies = await MeasureLatencyAsync(bench, context.Pick(TimeSpan.FromSeconds(3), TimeSpan.FromSeconds(0.3)), small, token);
        context.Log.WriteLine($"darq-delivery latency at {PacedRate}/s: {latencies.Count} samples, p50 {Stats.Percentile(latencies, 0.5):F2} ms, p99 {Stats.Percentile(latencies, 0.99):F2} ms");

        double batchedOps = Stats.Median(batched);
        double batched1kOps = Stats.Median(batched1k);
        double unpipelinedOps = Stats.Median(unpipelined);
        return new ScenarioResults()
            .Add("batched_msgs_per_s", batchedOps, 0)
            .Add("batched_1k_msgs_per_s", batched1kOps, 0)
            .Add("unpipelined_msgs_per_s", unpipelinedOps, 0)
            .Add("window_speedup", batchedOps / unpipelinedOps, 2)
            .Add("single_msgs_per_s", Stats.Median(single), 0)
            .Add("spilled_msgs_per_s", Stats.Median(spilled), 0)
            .Add("spilled_vs_batched_1k", Stats.Median(spilled) / batched1kOps, 2)
            .Add("backlogged_msgs_per_s", Stats.Median(backlogged), 0)
            .Add("backlogged_vs_batched_1k", Stats.Median(backlogged) / batched1kOps, 2)
            .Add("latency_p50_ms", Stats.Percentile(latencies, 0.5), 2)
            .Add("latency_p99_ms", Stats.Percentile(latencies, 0.99), 2)
            .Add("latency_rate_per_s", PacedRate)
            .Add("window", window)
            .Add("batch_size", BatchSize)
            .Add("message_bytes", SmallMessage)
            .Add("messages", messages)
            .Add("backlog_messages", backlog);
    }

    /// <summary>
    /// Steps the variant's OUT messages at the source, commits, then times their delivery until the last is acknowledged.
    /// </summary>
    private static async Task<double> MeasureAsync(DarqBench bench, Variant variant, CancellationToken cancellationToken)
    {
        var registry = new DarqDestinationRegistry();
        await using var destination = await OpenDestinationAsync(bench, registry);

        // The source sends nothing until its steps are committed: stepping with a long commit interval and one explicit
        // commit afterwards lets the timed phase start with every message deliverable.
        await using var source = await Darq.Darq.OpenAsync(new DarqOptions
        {
            Name = "source",
            LogDevice = bench.NewDevice("source"),
            CommitDevice = bench.NewDevice("source-commit"),
            CommitInterval = TimeSpan.FromHours(1),
            MemorySize = variant.Spill ? SpilledLogMemory : bench.MemorySize,
            Destinations = registry,
            DeliveryBatchSize = variant.BatchSize,
            DeliveryWindow = variant.Window,
            MaxBufferedOutBytes = variant.Spill ? 0 : new DarqOptions().MaxBufferedOutBytes,
        });
        var processor = await source.RegisterProcessorAsync(cancellationToken);
        var step = new DarqStep();
        var tiny = new byte[8];
        for (int i = 0; i < variant.Backlog; i++)
        {
            // Older messages to a destination nobody registered: retried with backoff, never delivered, always pending.
            await processor.StepAsync(step.Clear().AddOut("down", tiny), cancellationToken);
        }

        long last = -1;
        for (int i = 0; i < variant.Messages; i++)
        {
            last = (await processor.StepAsync(step.Clear().AddOut("sink", variant.Payload), cancellationToken)).OutLsns[0];
        }

        if (variant.Spill && source.SpilledOutCount != variant.Messages)
        {
            throw new InvalidOperationException($"The source spilled {source.SpilledOutCount} of {variant.Messages} OUT messages, expected all.");
        }

        var clock = Stopwatch.StartNew();
        await source.CommitAsync(cancellationToken);
        await source.WaitForDeliveredAsync(last, cancellationToken);
        var elapsed = clock.Elapsed;
        if (destination.UnconsumedCount != variant.Messages)
        {
            throw new InvalidOperationException($"The destination holds {destination.UnconsumedCount} messages, expected {variant.Messages}.");
        }

        return variant.Messages / elapsed.TotalSeconds;
    }

    /// <summary>
    /// Steps messages at <see cref="PacedRate"/> per second for <paramref name="duration"/> with both DARQs on their group
    /// commit, and returns, for every <see cref="LatencySample"/>-th message, the milliseconds from its step to its
    /// acknowledgement, in ascending order.
    /// </summary>
    private static async Task<List<double>> MeasureLatencyAsync(DarqBench bench, TimeSpan duration, byte[] payload, CancellationToken cancellationToken)
    {
        var registry = new DarqDestinationRegistry();
        await using var destination = await OpenDestinationAsync(bench, registry);
        await using var source = await Darq.Darq.OpenAsync(new DarqOptions
        {
            Name = "source",
            LogDevice = bench.NewDevice("source"),
            CommitDevice = bench.NewDevice("source-commit"),
            CommitInterval = DarqBench.CommitInterval,
            MemorySize = bench.MemorySize,
            Destinations = registry,
        });
        var processor = await source.RegisterProcessorAsync(cancellationToken);
        var step = new DarqStep();
        var samples = new List<double>();
        var waits = new List<Task>();
        const int PerTick = PacedRate / 1000;
        var clock = Stopwatch.StartNew();
        long stepped = 0;
        for (int tick = 0; clock.Elapsed < duration; tick++)
        {
            // About one millisecond's worth at a time, each tick due at its place on the schedule.
            var due = TimeSpan.FromMilliseconds(tick);
            if (due > clock.Elapsed)
            {
                await Task.Delay(due - clock.Elapsed, cancellationToken);
            }

            for (int i = 0; i < PerTick; i++)
            {
                long stepAt = Stopwatch.GetTimestamp();
                long lsn = (await processor.StepAsync(step.Clear().AddOut("sink", payload), cancellationToken)).OutLsns[0];
                if (stepped++ % LatencySample == 0)
                {
                    waits.Add(TimeAsync(source, lsn, stepAt, samples, cancellationToken));
                }
            }
        }

        await Task.WhenAll(waits);
        samples.Sort();
        return samples;

        static async Task TimeAsync(Darq.Darq source, long lsn, long stepAt, List<double> samples, CancellationToken cancellationToken)
        {
            await source.WaitForDeliveredAsync(lsn, cancellationToken);
            double ms = Stopwatch.GetElapsedTime(stepAt).TotalMilliseconds;
            lock (samples)
            {
                samples.Add(ms);
            }
        }
    }

    private static async Task<Darq.Darq> OpenDestinationAsync(DarqBench bench, DarqDestinationRegistry registry)
    {
        var destination = await Darq.Darq.OpenAsync(new DarqOptions
        {
            Name = "sink",
            LogDevice = bench.NewDevice("sink"),
            CommitDevice = bench.NewDevice("sink-commit"),
            CommitInterval = DarqBench.CommitInterval,
            MemorySize = bench.MemorySize,
        });
        registry.Add(destination);
        return destination;
    }

    /// <summary>One measured delivery: how many messages of which payload, in batches of what size, with what window.</summary>
    private readonly record struct Variant(int Messages, byte[] Payload, int BatchSize, int Window, bool Spill = false, int Backlog = 0);
}
