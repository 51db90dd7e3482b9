using System.Diagnostics;
using Dse.Benchmarks.Harness;
using Dse.Darq;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// OUT delivery throughput between two co-located DARQs on local files, each with a 5 ms group commit: a source holding
/// committed 1 KB OUT messages to one destination, delivered (and acknowledged once durable there) one at a time against
/// in batches of <see cref="DarqOptions.DeliveryBatchSize"/> 64, in the same run. Keys <c>single_msgs_per_s</c>,
/// <c>batched_msgs_per_s</c>, <c>speedup</c>. A third variant, <c>spilled_msgs_per_s</c>, delivers the same batches from a
/// source that keeps no OUT payload in memory (<see cref="DarqOptions.MaxBufferedOutBytes"/> 0) and whose log keeps
/// only <see cref="SpilledLogMemory"/> in memory, so the delivery loop reads almost every payload back from the log file.
/// A fourth, <c>backlogged_msgs_per_s</c>, delivers the same batches from a source that also holds
/// <see cref="Backlog"/> older messages to a destination that does not exist (retried with backoff, never delivered).
/// </summary>
public sealed class DarqDeliveryScenario : IScenario
{
    /// <summary>The spilled variant's source log memory: a small part of the backlog, the rest on the device.</summary>
    public const long SpilledLogMemory = 1L << 23;

    /// <summary>The backlogged variant's messages to a destination that is down, stepped before the measured ones.</summary>
    public const int Backlog = 200_000;

    public string Name => "darq-delivery";

    public string Description => "DARQ OUT delivery messages/s between two co-located DARQs (local files, 5 ms group commit): one at a time vs batches of 64, and batches of 64 read back from the log.";

    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        int singleMessages = context.Pick(1_000, 200);
        int batchedMessages = context.Pick(50_000, 5_000);
        int rounds = context.Pick(3, 1);
        using var bench = new DarqBench(inMemory: false, memorySize: 1L << 27);
        var single = new List<double>();
        var batched = new List<double>();
        var spilled = new List<double>();
        var backlogged = new List<double>();
        for (int round = 0; round < rounds; round++)
        {
            single.Add(await MeasureAsync(bench, singleMessages, batchSize: 1, spill: false, context.CancellationToken));
            batched.Add(await MeasureAsync(bench, batchedMessages, batchSize: 64, spill: false, context.CancellationToken));
            spilled.Add(await MeasureAsync(bench, batchedMessages, batchSize: 64, spill: true, context.CancellationToken));
            backlogged.Add(await MeasureAsync(bench, batchedMessages, batchSize: 64, spill: false, context.CancellationToken, context.Pick(Backlog, Backlog / 10)));
            context.Log.WriteLine($"darq-delivery round {round + 1}: one at a time {single[^1]:F0}/s, batches of 64 {batched[^1]:F0}/s, " +
                $"batches of 64 read back from the log {spilled[^1]:F0}/s, batches of 64 behind a backlog to a destination that is down {backlogged[^1]:F0}/s");
        }

        double singleOps = Stats.Median(single);
        double batchedOps = Stats.Median(batched);
        double spilledOps = Stats.Median(spilled);
        double backloggedOps = Stats.Median(backlogged);
        return new ScenarioResults()
            .Add("single_msgs_per_s", singleOps, 0)
            .Add("batched_msgs_per_s", batchedOps, 0)
            .Add("speedup", batchedOps / singleOps, 2)
            .Add("spilled_msgs_per_s", spilledOps, 0)
            .Add("spilled_vs_batched", spilledOps / batchedOps, 2)
            .Add("backlogged_msgs_per_s", backloggedOps, 0)
            .Add("backlogged_vs_batched", backloggedOps / batchedOps, 2)
            .Add("backlog_messages", context.Pick(Backlog, Backlog / 10))
            .Add("batch_size", 64)
            .Add("single_messages", singleMessages)
            .Add("batched_messages", batchedMessages)
            .Add("message_bytes", DarqBench.MessageSize);
    }

    /// <summary>
    /// Steps <paramref name="messages"/> OUT messages at the source, commits, then times their delivery until the last is
    /// acknowledged. With <paramref name="spill"/>, the source keeps no payload in memory and a small log memory.
    /// </summary>
    private static async Task<double> MeasureAsync(DarqBench bench, int messages, int batchSize, bool spill, CancellationToken cancellationToken, int backlog = 0)
    {
        var registry = new DarqDestinationRegistry();
        await using var destination = await Darq.Darq.OpenAsync(new DarqOptions
        {
            Name = "sink",
            LogDevice = bench.NewDevice("sink"),
            CommitDevice = bench.NewDevice("sink-commit"),
            CommitInterval = DarqBench.CommitInterval,
            MemorySize = bench.MemorySize,
        });
        registry.Add(destination);

        // The source sends nothing until its steps are committed: stepping with a long commit interval and one explicit
        // commit afterwards lets the timed phase start with every message deliverable.
        var payload = DarqBench.Payload();
        await using var source = await Darq.Darq.OpenAsync(new DarqOptions
        {
            Name = "source",
            LogDevice = bench.NewDevice("source"),
            CommitDevice = bench.NewDevice("source-commit"),
            CommitInterval = TimeSpan.FromHours(1),
            MemorySize = spill ? SpilledLogMemory : bench.MemorySize,
            Destinations = registry,
            DeliveryBatchSize = batchSize,
            MaxBufferedOutBytes = spill ? 0 : new DarqOptions().MaxBufferedOutBytes,
        });
        var processor = await source.RegisterProcessorAsync(cancellationToken);
        var step = new DarqStep();
        var small = new byte[8];
        for (int i = 0; i < backlog; i++)
        {
            // Older messages to a destination nobody registered: retried with backoff, never delivered, always pending.
            await processor.StepAsync(step.Clear().AddOut("down", small), cancellationToken);
        }

        long last = -1;
        for (int i = 0; i < messages; i++)
        {
            last = (await processor.StepAsync(step.Clear().AddOut("sink", payload), cancellationToken)).OutLsns[0];
        }

        if (spill && source.SpilledOutCount != messages)
        {
            throw new InvalidOperationException($"The source spilled {source.SpilledOutCount} of {messages} OUT messages, expected all.");
        }

        var clock = Stopwatch.StartNew();
        await source.CommitAsync(cancellationToken);
        await source.WaitForDeliveredAsync(last, cancellationToken);
        var elapsed = clock.Elapsed;
        if (spill && source.SpilledOutCount != 0)
        {
            throw new InvalidOperationException($"The source still counts {source.SpilledOutCount} spilled OUT messages after the last was delivered.");
        }

        if (destination.UnconsumedCount != messages)
        {
            throw new InvalidOperationException($"The destination holds {destination.UnconsumedCount} messages, expected {messages}.");
        }

        return messages / elapsed.TotalSeconds;
    }
}
