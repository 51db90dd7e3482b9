using System.Buffers.Binary;
using System.Diagnostics;
using System.Threading.Channels;
using Dse.Benchmarks.Harness;
using Dse.Darq;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// What a consume-only <c>darq-step</c> step is made of, against the same raw baseline (an in-place scan of preloaded
/// 1 KB entries plus one 48-byte append each), in one run: loops that do part of what a step does, so the gap between
/// the raw loop and a DARQ step can be placed.
/// <list type="bullet">
/// <item><c>skeleton</c>: an unbounded single-reader channel (as the processor stream is) of small message objects (packed, allocated one after another), an
/// interlocked gate, a 48-byte append naming the message's LSN. No DARQ.</item>
/// <item><c>spread</c>: the same, each message object allocated next to its own 1 KB payload, so they lie 1 KB apart.</item>
/// <item><c>stream</c>: a DARQ's processor stream and a reused <see cref="DarqStep"/>, then the skeleton's gate and
/// append (to a raw log of its own): everything a processor loop does but <see cref="DarqProcessor.StepAsync"/>.</item>
/// <item><c>step</c>: the real consume-only steps, as <c>darq-step</c> measures them.</item>
/// <item><c>multi</c>: real steps that each consume every message available, up to <see cref="DarqStepScenario.BatchSize"/>
/// (one step, one completion record listing them all): the step's fixed cost shared by many messages.</item>
/// </list>
/// Keys: <c>raw_ops</c>, each loop's <c>*_ops</c> and its <c>*_ratio</c> to the raw loop (medians over rounds).
/// </summary>
public sealed class DarqStepPartsScenario : IScenario
{
    public string Name => "darq-step-parts";

    public string Description => "What a consume-only DARQ step costs, in parts: a bare channel+gate+append skeleton (packed and spread), the DARQ's " +
        "processor stream with a bare append, real steps, and steps consuming up to 64 messages each, each / the raw FasterLog scan+append; same device, same run.";

    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        int messages = context.Pick(300_000, 20_000);
        int rounds = context.Pick(5, 1);
        using var bench = new DarqBench(inMemory: false, memorySize: 1L << 29);
        var raw = new List<double>();
        var skeleton = new List<double>();
        var spread = new List<double>();
        var stream = new List<double>();
        var step = new List<double>();
        var multi = new List<double>();
        // Discarded rounds first (as darq-step's: until the JIT falls quiet), so that every loop runs on its final code.
        int warmupMessages = context.Pick(DarqStepScenario.WarmupMessages, 20_000);
        var (warmups, quiet) = await JitWarmup.RunAsync(Name, async () =>
            {
                await DarqStepScenario.MeasureRawScanAppendAsync(bench, warmupMessages, copy: false);
                await MeasureSkeletonAsync(bench, warmupMessages, spreadMessages: false);
                await MeasureSkeletonAsync(bench, warmupMessages, spreadMessages: true);
                await MeasureStreamAsync(bench, warmupMessages, context.CancellationToken);
                await DarqStepScenario.MeasureStepsAsync(bench, warmupMessages, sendOut: false, context.CancellationToken);
                await MeasureMultiConsumeAsync(bench, warmupMessages, context.CancellationToken);
            },
            context.Pick(DarqStepScenario.WarmupRounds, 1), context.Pick(DarqStepScenario.MaxWarmupRounds, 1), context.Log);
        long compiledBefore = JitWarmup.CompiledMethods;
        for (int round = 0; round < rounds; round++)
        {
            double r = await DarqStepScenario.MeasureRawScanAppendAsync(bench, messages, copy: false);
            double k = await MeasureSkeletonAsync(bench, messages, spreadMessages: false);
            double p = await MeasureSkeletonAsync(bench, messages, spreadMessages: true);
            double s = await MeasureStreamAsync(bench, messages, context.CancellationToken);
            double d = await DarqStepScenario.MeasureStepsAsync(bench, messages, sendOut: false, context.CancellationToken);
            double m = await MeasureMultiConsumeAsync(bench, messages, context.CancellationToken);
            raw.Add(r);
            skeleton.Add(k);
            spread.Add(p);
            stream.Add(s);
            step.Add(d);
            multi.Add(m);
            context.Log.WriteLine($"darq-step-parts round {round + 1}: raw {r:F0}/s; skeleton {k:F0}/s ({k / r:F3}); spread {p:F0}/s ({p / r:F3}); " +
                $"stream {s:F0}/s ({s / r:F3}); step {d:F0}/s ({d / r:F3}); multi {m:F0} messages/s ({m / r:F3})");
        }

        double rawOps = Stats.Median(raw);
        return new ScenarioResults()
            .Add("raw_ops", rawOps, 0)
            .Add("skeleton_ops", Stats.Median(skeleton), 0)
            .Add("skeleton_ratio", Stats.Median(skeleton) / rawOps, 3)
            .Add("spread_ops", Stats.Median(spread), 0)
            .Add("spread_ratio", Stats.Median(spread) / rawOps, 3)
            .Add("stream_ops", Stats.Median(stream), 0)
            .Add("stream_ratio", Stats.Median(stream) / rawOps, 3)
            .Add("step_ops", Stats.Median(step), 0)
            .Add("step_ratio", Stats.Median(step) / rawOps, 3)
            .Add("multi_ops", Stats.Median(multi), 0)
            .Add("multi_ratio", Stats.Median(multi) / rawOps, 3)
            .Add("multi_max_messages", DarqStepScenario.BatchSize)
            .Add("warmup_rounds", warmups)
            .Add("warmup_quiet", quiet ? 1 : 0)
            .Add("jit_methods_measured", JitWarmup.CompiledMethods - compiledBefore)
            .Add("messages", messages)
            .Add("message_bytes", DarqBench.MessageSize);
    }

    /// <summary>
    /// The skeleton: <paramref name="messages"/> 1 KB entries preloaded into a raw log (as the DARQ holds its messages),
    /// a message object per entry in a channel, then per message an interlocked gate and a 48-byte append.
    /// </summary>
    private static async Task<double> MeasureSkeletonAsync(DarqBench bench, int messages, bool spreadMessages)
    {
        await using var log = bench.OpenRaw();
        var payload = DarqBench.Payload();
        var channel = Channel.CreateUnbounded<Message>(new UnboundedChannelOptions { SingleReader = true, SingleWriter = false });
        for (int i = 0; i < messages; i++)
        {
            long lsn = await log.EnqueueAsync(payload);
            // Spread: each object right after its own payload copy, as entries that keep their payloads would lie.
            channel.Writer.TryWrite(new Message(lsn, spreadMessages ? payload.ToArray() : payload));
        }

        await log.Log.CommitAsync();
        await using var appendLog = bench.OpenRaw();
        return await TimeGateAndAppendAsync(channel.Reader, message => message.Lsn, appendLog, messages);
    }

    /// <summary>A DARQ's processor stream and a reused step object, then the skeleton's gate and append instead of a step.</summary>
    private static async Task<double> MeasureStreamAsync(DarqBench bench, int messages, CancellationToken cancellationToken)
    {
        var (darq, processor) = await DarqStepScenario.PreloadAsync(bench, messages, DarqBench.Payload(), cancellationToken);
        await using var owned = darq;
        await using var appendLog = bench.OpenRaw();
        var step = new DarqStep();
        return await TimeGateAndAppendAsync(processor.Messages, message => step.Clear().Consume(message).Consumed[0], appendLog, messages);
    }

    /// <summary>Consume-only steps that each consume every message available, up to <see cref="DarqStepScenario.BatchSize"/>; messages per second.</summary>
    private static async Task<double> MeasureMultiConsumeAsync(DarqBench bench, int messages, CancellationToken cancellationToken)
    {
        var (darq, processor) = await DarqStepScenario.PreloadAsync(bench, messages, DarqBench.Payload(), cancellationToken);
        await using var owned = darq;
        var available = new List<DarqMessage>(DarqStepScenario.BatchSize);
        var step = new DarqStep();
        int consumed = 0;
        DarqStepScenario.Settle();
        var clock = Stopwatch.StartNew();
        while (consumed < messages &&
            await processor.ReadAvailableAsync(available, Math.Min(DarqStepScenario.BatchSize, messages - consumed), cancellationToken) > 0)
        {
            step.Clear();
            foreach (var message in available)
            {
                step.Consume(message);
            }

            await processor.StepAsync(step, cancellationToken);
            consumed += available.Count;
            available.Clear();
        }

        return messages / clock.Elapsed.TotalSeconds;
    }

    /// <summary>Times, for each of the first <paramref name="messages"/> items, an interlocked gate and a 48-byte append naming <paramref name="lsnOf"/>.</summary>
    private static async Task<double> TimeGateAndAppendAsync<T>(ChannelReader<T> source, Func<T, long> lsnOf, DarqBench.RawLog log, int messages)
    {
        var completion = new byte[DarqStepScenario.CompletionRecordSize];
        int gate = 0;
        int done = 0;
        DarqStepScenario.Settle();
        var clock = Stopwatch.StartNew();
        // The loop shape of darq-step's (and the raw loop's): read without waiting, wait only when nothing is there.
        while (true)
        {
            if (!source.TryRead(out var item))
            {
                if (!await source.WaitToReadAsync())
                {
                    throw new InvalidOperationException($"The stream ended after {done} of {messages} messages.");
                }

                continue;
            }

            if (Interlocked.CompareExchange(ref gate, 1, 0) != 0)
            {
                throw new InvalidOperationException("The skeleton's gate is taken by no one else.");
            }

            BinaryPrimitives.WriteInt64LittleEndian(completion.AsSpan(DarqStepScenario.CompletionRecordSize - 8), lsnOf(item));
            await log.EnqueueAsync(completion);
            Interlocked.Exchange(ref gate, 0);
            if (++done == messages)
            {
                break;
            }
        }

        return messages / clock.Elapsed.TotalSeconds;
    }

    private sealed record Message(long Lsn, byte[] Payload);
}
