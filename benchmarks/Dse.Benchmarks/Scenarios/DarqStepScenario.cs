using System.Diagnostics;
using Dse.Benchmarks.Harness;
using Dse.Darq;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// Co-located processor throughput: a processor steps preloaded 1 KB messages, each step consuming one message and
/// sending one 1 KB OUT message (validated, appended atomically with its completion record). The baseline is one
/// writer enqueueing the same number of 1 KB entries into a raw FasterLog on the same kind of device, with the same
/// 512 MB log memory.
/// </summary>
public sealed class DarqStepScenario : IScenario
{
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
        for (int round = 0; round < rounds; round++)
        {
            raw.Add(await MeasureRawAsync(bench, messages));
            steps.Add(await MeasureStepsAsync(bench, messages, context.CancellationToken));
            context.Log.WriteLine($"darq-step round {round + 1}: raw {raw[^1]:F0}/s, steps {steps[^1]:F0}/s");
        }

        double rawOps = Stats.Median(raw);
        double darqOps = Stats.Median(steps);
        return new ScenarioResults()
            .Add("darq_ops", darqOps, 0)
            .Add("raw_ops", rawOps, 0)
            .Add("ratio", darqOps / rawOps, 3)
            .Add("messages", messages)
            .Add("message_bytes", DarqBench.MessageSize);
    }

    private static async Task<double> MeasureRawAsync(DarqBench bench, int messages)
    {
        await using var raw = bench.OpenRaw();
        var payload = DarqBench.Payload();
        var clock = Stopwatch.StartNew();
        for (int i = 0; i < messages; i++)
        {
            await raw.EnqueueAsync(payload);
        }

        return messages / clock.Elapsed.TotalSeconds;
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
        var clock = Stopwatch.StartNew();
        await foreach (var message in processor.ReadAllAsync(cancellationToken))
        {
            await processor.StepAsync(step.Clear().Consume(message).AddOut("sink", payload), cancellationToken);
            if (++stepped == messages)
            {
                break;
            }
        }

        return messages / clock.Elapsed.TotalSeconds;
    }
}
