using System.Buffers.Binary;
using System.Diagnostics;
using Dse.Benchmarks.Harness;
using Dse.Darq;
using FASTER.core;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// Co-located processor throughput on preloaded 1 KB messages, in two variants, each against its own raw FasterLog
/// baseline on the same kind of device with the same log settings, 512 MB log memory and commit interval.
/// <list type="bullet">
/// <item>The paper's (DARQ paper, Table 3, "Colocated-ssd"): each step only consumes its message (a completion record,
/// validated and appended), through the consume-only API (<see cref="DarqProcessor.ConsumeAsync(DarqMessage, CancellationToken)"/>);
/// <c>general_*</c> takes the same steps through the general one (<see cref="DarqProcessor.StepAsync"/> with a reused
/// <see cref="DarqStep"/>), in a phase of its own at the end of each round. The baseline scans each preloaded 1 KB entry of a raw FasterLog with an iterator (from
/// memory) and appends one entry of the completion record's size per entry. Keys <c>darq_ops</c>, <c>raw_ops</c>,
/// <c>ratio</c> (of the medians over rounds), <c>round_ratio</c> (the median of each round's own ratio: a round's two
/// phases run seconds apart, so a slow spell of the shared machine touches both or neither), <c>max_round_steal</c> (the
/// largest share of CPU time the hypervisor took in a round), <c>raw_faults_per_kop</c> and <c>step_faults_per_kop</c>
/// (minor page faults per 1,000 operations), <c>many_fault_rounds</c> (rounds whose step phase took more than
/// <see cref="ManyFaultsPerKiloStep"/>), and the batched <c>batch_*</c>; <c>copy_*</c> is the same baseline with a
/// scan that copies each entry out (FasterLog's plain <c>GetNext</c>). Each round's ratio, steal and both phases'
/// faults are in the JSON's samples.</item>
/// <item>The consume+OUT variant: each step consumes one message and sends one 1 KB OUT message; the baseline is one
/// writer enqueueing as many 1 KB entries. Keys <c>out_*</c>.</item>
/// </list>
/// Each variant is measured one step at a time and in batches (<see cref="BatchSize"/> steps per
/// <see cref="DarqProcessor.StepBatchAsync"/>, the messages taken with <see cref="DarqProcessor.ReadAvailableAsync"/>).
/// </summary>
public sealed class DarqStepScenario : IScenario
{
    /// <summary>The most steps per batch in the batched measurements.</summary>
    public const int BatchSize = 64;

    /// <summary>
    /// The size of a DARQ completion record that consumes one message (docs/darq-format.md): the 24-byte entry header,
    /// then incarnation (8), step entry count (4), consumed count (4) and one consumed LSN (8).
    /// </summary>
    public const int CompletionRecordSize = 24 + 8 + 4 + 4 + 8;

    /// <summary>
    /// The DARQ's IN budget (<see cref="DarqOptions.MaxBufferedInBytes"/>) in the spilled phase of a full run: the default,
    /// so that all but the first 64 MiB of the preload wait in the log only and are read back as the processor gets to them.
    /// </summary>
    public const long SpillBudget = 64L << 20;

    /// <summary>The spilled phase's budget for a preload of <paramref name="messages"/>: <see cref="SpillBudget"/>, or a quarter of the preload when that is less (quick runs), so most of it is read back.</summary>
    private static long SpillBudgetFor(int messages) => Math.Min(SpillBudget, (long)messages * DarqBench.MessageSize / 4);

    /// <summary>Messages per phase of each discarded warm-up round.</summary>
    public const int WarmupMessages = 50_000;

    /// <summary>
    /// The fewest discarded warm-up rounds in a full run: on two cores the JIT's tier-1 code for both sides (DARQ's step
    /// path, the raw loop, FasterLog) arrives over several seconds, and a single short warm-up would leave the first
    /// measured rounds on tier-0 code, several times slower. More rounds follow until one compiles (almost) nothing
    /// (<see cref="JitWarmup"/>), up to <see cref="MaxWarmupRounds"/>.
    /// </summary>
    public const int WarmupRounds = 2;

    /// <summary>Measured rounds in a full run; the keys are medians over them.</summary>
    public const int Rounds = 9;

    /// <summary>The most warm-up rounds in a full run, if the JIT never falls quiet.</summary>
    public const int MaxWarmupRounds = 12;

    /// <summary>
    /// Minor page faults per 1,000 steps above which a round's single-step phase counts in <c>many_fault_rounds</c>. The
    /// phase takes either a few (only the last of its new log pages land on memory the GC gave back) or over ten (all of
    /// them do); the raw phase takes about one.
    /// </summary>
    public const double ManyFaultsPerKiloStep = 5;

    /// <summary>The share of the last timed phase spent in garbage-collection pauses (logged with each round).</summary>
    private static double s_lastPauseShare;

    /// <summary>The process CPU time (all threads: the loop, commits, device writes, GC) per operation of the last timed phase, in microseconds.</summary>
    private static double s_lastCpuMicros;

    /// <summary>The process's minor page faults per 1,000 operations of the last timed phase.</summary>
    private static double s_lastFaultsPerKiloOp;

    public string Name => "darq-step";

    public string Description => "DARQ co-located processor steps/s (consume only) / raw FasterLog scan of 1 KB entries + one completion-sized append each, " +
        "and steps/s (consume 1, send 1 KB OUT) / raw FasterLog 1 KB enqueues; same device, same run.";

    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        // The consume-only phases write little (a 48-byte completion per message), so they are short: twice the messages
        // of the consume+OUT phases, still within the log's memory.
        int messages = context.Pick(300_000, 20_000);
        int outMessages = context.Pick(150_000, 20_000);
        // Nine rounds: the rounds of one run can swing by up to 2x on either side on a shared machine, and a median over
        // nine moves less between runs.
        int rounds = context.Pick(Rounds, 1);
        // The preloaded messages fit in the log's memory (for both logs), so steps and the raw scan read them from
        // memory: the scenario measures stepping, not reading a cold log back from disk.
        using var bench = new DarqBench(inMemory: false, memorySize: 1L << 29);
        // Warm-up rounds (every phase, WarmupMessages each) are run and discarded, so no measured round pays for JIT
        // compilation and tiering.
        int warmupMessages = context.Pick(WarmupMessages, 20_000);
        var (warmups, quiet) = await JitWarmup.RunAsync(Name,
            () => RunRoundAsync(bench, warmupMessages, warmupMessages, new Variant(), new Variant(), context.CancellationToken),
            context.Pick(WarmupRounds, 1), context.Pick(MaxWarmupRounds, 1), context.Log);
        var paper = new Variant();
        var withOut = new Variant();
        long compiledBefore = JitWarmup.CompiledMethods;
        var roundRatios = new List<double>();
        var roundSteal = new List<double>();
        for (int round = 0; round < rounds; round++)
        {
            long roundStart = JitWarmup.CompiledMethods;
            var stealStart = CpuSteal.Now();
            await RunRoundAsync(bench, messages, outMessages, paper, withOut, context.CancellationToken);
            double steal = CpuSteal.Now().ShareSince(stealStart);
            roundSteal.Add(steal);
            roundRatios.Add(paper.Steps.Ops[^1] / paper.Raw.Ops[^1]);
            context.Log.WriteLine($"darq-step round {round + 1}: the JIT compiled {JitWarmup.CompiledMethods - roundStart} methods; " +
                $"the host took {steal:P1} of the CPU time (steal); steps / raw scan+append in this round {roundRatios[^1]:F3}");
            context.Log.WriteLine($"darq-step round {round + 1}, consume only: {paper.Describe("raw scan+append")}; " +
                $"raw scan (copying)+append {paper.RawCopy.Ops[^1]:F0}/s (GC pauses {paper.RawCopy.Pause[^1]:P0}; CPU {paper.RawCopy.Cpu[^1]:F2} us per operation); " +
                $"raw scan+append truncating {paper.RawTruncating.Ops[^1]:F0}/s (CPU {paper.RawTruncating.Cpu[^1]:F2} us per operation); " +
                $"steps through a spilled backlog {paper.Spilled.Ops[^1]:F0}/s (GC pauses {paper.Spilled.Pause[^1]:P0}; CPU {paper.Spilled.Cpu[^1]:F2} us per operation); " +
                $"general steps (StepAsync) {paper.General.Ops[^1]:F0}/s ({paper.General.Ops[^1] / paper.Raw.Ops[^1]:F3}; CPU {paper.General.Cpu[^1]:F2} us per operation; " +
                $"page faults {paper.General.Faults[^1]:F1} per 1,000)");
            context.Log.WriteLine($"darq-step round {round + 1}, consume+OUT: {withOut.Describe("raw enqueue")}");
        }

        long compiledMeasured = JitWarmup.CompiledMethods - compiledBefore;
        double rawOps = Stats.Median(paper.Raw.Ops);
        double darqOps = Stats.Median(paper.Steps.Ops);
        double batchOps = Stats.Median(paper.Batched.Ops);
        double outRawOps = Stats.Median(withOut.Raw.Ops);
        double outDarqOps = Stats.Median(withOut.Steps.Ops);
        double outBatchOps = Stats.Median(withOut.Batched.Ops);
        var results = new ScenarioResults()
            .Add("darq_ops", darqOps, 0)
            .Add("raw_ops", rawOps, 0)
            .Add("ratio", darqOps / rawOps, 3)
            .Add("round_ratio", Stats.Median(roundRatios), 3)
            .Add("max_round_steal", roundSteal.Max(), 3)
            .Add("general_darq_ops", Stats.Median(paper.General.Ops), 0)
            .Add("general_ratio", Stats.Median(paper.General.Ops) / rawOps, 3)
            .Add("general_round_ratio", Stats.Median(paper.General.Ops.Select((ops, i) => ops / paper.Raw.Ops[i]).ToList()), 3)
            .Add("general_cpu_us", Stats.Median(paper.General.Cpu), 2)
            .Add("batch_darq_ops", batchOps, 0)
            .Add("batch_ratio", batchOps / rawOps, 3)
            .Add("raw_cpu_us", Stats.Median(paper.Raw.Cpu), 2)
            .Add("step_cpu_us", Stats.Median(paper.Steps.Cpu), 2)
            .Add("batch_cpu_us", Stats.Median(paper.Batched.Cpu), 2)
            .Add("cpu_ratio", Stats.Median(paper.Raw.Cpu) / Stats.Median(paper.Steps.Cpu), 3)
            .Add("raw_faults_per_kop", Stats.Median(paper.Raw.Faults), 1)
            .Add("step_faults_per_kop", Stats.Median(paper.Steps.Faults), 1)
            .Add("copy_raw_ops", Stats.Median(paper.RawCopy.Ops), 0)
            .Add("copy_ratio", darqOps / Stats.Median(paper.RawCopy.Ops), 3)
            .Add("copy_raw_cpu_us", Stats.Median(paper.RawCopy.Cpu), 2)
            .Add("trunc_raw_ops", Stats.Median(paper.RawTruncating.Ops), 0)
            .Add("trunc_ratio", darqOps / Stats.Median(paper.RawTruncating.Ops), 3)
            .Add("trunc_raw_cpu_us", Stats.Median(paper.RawTruncating.Cpu), 2)
            .Add("spill_darq_ops", Stats.Median(paper.Spilled.Ops), 0)
            .Add("spill_ratio", Stats.Median(paper.Spilled.Ops) / Stats.Median(paper.RawCopy.Ops), 3)
            .Add("spill_cpu_us", Stats.Median(paper.Spilled.Cpu), 2)
            .Add("spill_budget_bytes", SpillBudgetFor(messages))
            .Add("out_darq_ops", outDarqOps, 0)
            .Add("out_raw_ops", outRawOps, 0)
            .Add("out_ratio", outDarqOps / outRawOps, 3)
            .Add("out_batch_darq_ops", outBatchOps, 0)
            .Add("out_batch_ratio", outBatchOps / outRawOps, 3)
            .Add("out_raw_cpu_us", Stats.Median(withOut.Raw.Cpu), 2)
            .Add("out_step_cpu_us", Stats.Median(withOut.Steps.Cpu), 2)
            .Add("out_batch_cpu_us", Stats.Median(withOut.Batched.Cpu), 2)
            .Add("out_cpu_ratio", Stats.Median(withOut.Raw.Cpu) / Stats.Median(withOut.Steps.Cpu), 3)
            .Add("warmup_rounds", warmups)
            .Add("warmup_quiet", quiet ? 1 : 0)
            .Add("jit_methods_measured", compiledMeasured)
            .Add("batch_size", BatchSize)
            .Add("completion_bytes", CompletionRecordSize)
            .Add("messages", messages)
            .Add("out_messages", outMessages)
            .Add("message_bytes", DarqBench.MessageSize)
            .Add("many_fault_rounds", paper.Steps.Faults.Count(faults => faults > ManyFaultsPerKiloStep));

        // Each measured round's own figures, so that a run's rounds can be compared without its log (a round whose step
        // phase faults on every new log page runs slower than one that does not).
        results.AddSamples("round_ratios", roundRatios);
        results.AddSamples("round_steal", roundSteal);
        results.AddSamples("round_step_faults_per_kop", paper.Steps.Faults);
        results.AddSamples("round_raw_faults_per_kop", paper.Raw.Faults);
        return results;
    }

    /// <summary>One round: the nine timed phases, each on a fresh log, in a fixed order.</summary>
    private static async Task RunRoundAsync(DarqBench bench, int messages, int outMessages, Variant paper, Variant withOut, CancellationToken cancellationToken)
    {
        paper.Raw.Add(await MeasureRawScanAppendAsync(bench, messages, copy: false));
        paper.RawCopy.Add(await MeasureRawScanAppendAsync(bench, messages, copy: true));
        paper.Steps.Add(await MeasureStepsAsync(bench, messages, sendOut: false, cancellationToken));
        paper.Batched.Add(await MeasureBatchedStepsAsync(bench, messages, sendOut: false, cancellationToken));
        withOut.Raw.Add(await MeasureRawEnqueueAsync(bench, outMessages));
        withOut.Steps.Add(await MeasureStepsAsync(bench, outMessages, sendOut: true, cancellationToken));
        withOut.Batched.Add(await MeasureBatchedStepsAsync(bench, outMessages, sendOut: true, cancellationToken));

        // Last, so that these variants of the phases above (truncating, spilled) do not change the conditions they run in.
        paper.RawTruncating.Add(await MeasureRawScanAppendAsync(bench, messages, copy: false, truncate: true));
        paper.Spilled.Add(await MeasureStepsAsync(bench, messages, sendOut: false, cancellationToken, SpillBudgetFor(messages)));
        // Last too: the consume-only steps above taken through the general StepAsync, to show what the consume-only API saves.
        paper.General.Add(await MeasureStepsAsync(bench, messages, sendOut: false, cancellationToken, generalStep: true));
    }

    /// <summary>
    /// Collects the garbage of earlier phases (a disposed DARQ's retained payloads) before a timed phase starts, so
    /// no phase pays for the previous one's; what the phase itself retains (a DARQ's preload) is promoted, as in a
    /// long-running process.
    /// </summary>
    internal static void Settle()
    {
        GC.Collect(GC.MaxGeneration, GCCollectionMode.Forced, blocking: true, compacting: true);
        GC.WaitForPendingFinalizers();
        GC.Collect(GC.MaxGeneration, GCCollectionMode.Forced, blocking: true, compacting: true);
    }

    /// <summary>
    /// The paper's raw baseline: preload (untimed) and commit as many 1 KB entries into a raw FasterLog, then scan each
    /// with an iterator (the entries are in log memory; the consumer sees each in place, no copy) and append one
    /// <see cref="CompletionRecordSize"/>-byte entry naming its address, as a DARQ step appends its completion record.
    /// </summary>
    internal static async Task<double> MeasureRawScanAppendAsync(DarqBench bench, int messages, bool copy, bool truncate = false)
    {
        await using var raw = bench.OpenRaw();
        var payload = DarqBench.Payload();
        long begin = raw.Log.TailAddress;
        for (int i = 0; i < messages; i++)
        {
            await raw.EnqueueAsync(payload);
        }

        long end = raw.Log.TailAddress;
        await raw.Log.CommitAsync();
        var completion = new byte[CompletionRecordSize];
        var reader = new EntryReader();
        using var iterator = raw.Log.Scan(begin, end, name: null, recover: false);
        int scanned = 0;
        Settle();
        var meter = PhaseMeter.Start();
        while (scanned < messages)
        {
            bool found;
            if (copy)
            {
                // The entry copied out into a new array, as FasterLog's plain GetNext does.
                found = iterator.GetNext(out byte[] entry, out int length, out long address);
                if (found)
                {
                    reader.Consume(entry.AsSpan(0, length), address, 0);
                }
            }
            else
            {
                found = iterator.TryConsumeNext(reader);
            }

            if (!found)
            {
                if (!await iterator.WaitAsync())
                {
                    throw new InvalidOperationException($"The raw scan ended after {scanned} of {messages} preloaded entries.");
                }

                continue;
            }

            BinaryPrimitives.WriteInt64LittleEndian(completion.AsSpan(CompletionRecordSize - 8), reader.Address);
            await raw.EnqueueAsync(completion);
            scanned++;
            if (truncate)
            {
                // The scanned entry is done with: the commit loop may truncate up to the next one.
                raw.TruncateUntil = iterator.NextAddress;
            }
        }

        double opsPerSecond = meter.Stop(messages);
        if (reader.Bytes != (long)messages * DarqBench.MessageSize)
        {
            throw new InvalidOperationException($"The raw scan read {reader.Bytes} bytes, expected {messages} entries of {DarqBench.MessageSize} bytes.");
        }

        return opsPerSecond;
    }

    /// <summary>The consume+OUT baseline: one writer enqueueing 1 KB entries.</summary>
    private static async Task<double> MeasureRawEnqueueAsync(DarqBench bench, int messages)
    {
        await using var raw = bench.OpenRaw();
        var payload = DarqBench.Payload();
        Settle();
        var meter = PhaseMeter.Start();
        for (int i = 0; i < messages; i++)
        {
            await raw.EnqueueAsync(payload);
        }

        return meter.Stop(messages);
    }

    /// <summary>A fresh DARQ with <paramref name="messages"/> 1 KB messages enqueued and committed, and its processor registered.</summary>
    internal static async Task<(Darq.Darq Darq, DarqProcessor Processor)> PreloadAsync(DarqBench bench, int messages, byte[] payload, CancellationToken cancellationToken,
        long? maxBufferedInBytes = null)
    {
        var darq = await bench.OpenDarqAsync(maxBufferedInBytes);
        try
        {
            for (int i = 0; i < messages; i++)
            {
                await darq.EnqueueAsync(payload, cancellationToken);
            }

            await darq.CommitAsync(cancellationToken);
            return (darq, await darq.RegisterProcessorAsync(cancellationToken));
        }
        catch
        {
            await darq.DisposeAsync();
            throw;
        }
    }

    /// <summary>
    /// Steps <paramref name="messages"/> preloaded messages one at a time: consume-only steps through
    /// <see cref="DarqProcessor.ConsumeAsync(DarqMessage, CancellationToken)"/>, or through <see cref="DarqProcessor.StepAsync"/>
    /// and one reused <see cref="DarqStep"/> when <paramref name="generalStep"/> is set or each step also sends an OUT message.
    /// </summary>
    /// <returns>Steps per second.</returns>
    internal static async Task<double> MeasureStepsAsync(DarqBench bench, int messages, bool sendOut, CancellationToken cancellationToken,
        long? maxBufferedInBytes = null, bool generalStep = false)
    {
        var payload = DarqBench.Payload();
        var (darq, processor) = await PreloadAsync(bench, messages, payload, cancellationToken, maxBufferedInBytes);
        await using var owned = darq;
        int stepped = 0;
        // One step object reused for every step (DarqStep.Clear), as a processor loop would.
        var step = new DarqStep();
        Settle();
        var meter = PhaseMeter.Start();
        // The raw loop's shape: take what is there without waiting (the raw loop's TryConsumeNext, here the stream's
        // TryRead), and wait only when nothing is (its WaitAsync, here WaitToReadAsync).
        var stream = processor.Messages;
        while (stepped < messages)
        {
            if (!stream.TryRead(out var message))
            {
                if (!await stream.WaitToReadAsync(cancellationToken))
                {
                    throw new InvalidOperationException($"The processor's stream ended after {stepped} of {messages} preloaded messages.");
                }

                continue;
            }

            if (sendOut || generalStep)
            {
                step.Clear().Consume(message);
                if (sendOut)
                {
                    step.AddOut("sink", payload);
                }

                await processor.StepAsync(step, cancellationToken);
            }
            else
            {
                // A consume-only step through its own API: no step object, and an 8-byte result.
                await processor.ConsumeAsync(message.Lsn, cancellationToken);
            }

            stepped++;
        }

        return meter.Stop(messages);
    }

    /// <summary>The same steps, taken as they are available, up to <see cref="BatchSize"/> per batch.</summary>
    private static async Task<double> MeasureBatchedStepsAsync(DarqBench bench, int messages, bool sendOut, CancellationToken cancellationToken)
    {
        var payload = DarqBench.Payload();
        var (darq, processor) = await PreloadAsync(bench, messages, payload, cancellationToken);
        await using var owned = darq;
        var available = new List<DarqMessage>(BatchSize);
        var pool = new DarqStep[BatchSize];
        for (int i = 0; i < pool.Length; i++)
        {
            pool[i] = new DarqStep();
        }

        var batch = new List<DarqStep>(BatchSize);
        int stepped = 0;
        Settle();
        var meter = PhaseMeter.Start();
        while (stepped < messages && await processor.ReadAvailableAsync(available, Math.Min(BatchSize, messages - stepped), cancellationToken) > 0)
        {
            batch.Clear();
            for (int i = 0; i < available.Count; i++)
            {
                var step = pool[i].Clear().Consume(available[i]);
                if (sendOut)
                {
                    step.AddOut("sink", payload);
                }

                batch.Add(step);
            }

            await processor.StepBatchAsync(batch, cancellationToken);
            stepped += available.Count;
            available.Clear();
        }

        return meter.Stop(messages);
    }

    /// <summary>Sees each scanned entry in place in log memory: its address and length (no copy of the payload).</summary>
    private sealed class EntryReader : ILogEntryConsumer
    {
        public long Address { get; private set; }

        public long Bytes { get; private set; }

        public void Consume(ReadOnlySpan<byte> entry, long currentAddress, long nextAddress)
        {
            Address = currentAddress;
            Bytes += entry.Length;
        }
    }

    /// <summary>Per-round measurements of one timed phase.</summary>
    private sealed class Phase
    {
        public List<double> Ops { get; } = [];

        public List<double> Cpu { get; } = [];

        public List<double> Pause { get; } = [];

        public List<double> Faults { get; } = [];

        /// <summary>Records a phase's operations per second with what the last timed phase measured besides.</summary>
        public void Add(double ops)
        {
            Ops.Add(ops);
            Cpu.Add(s_lastCpuMicros);
            Pause.Add(s_lastPauseShare);
            Faults.Add(s_lastFaultsPerKiloOp);
        }
    }

    /// <summary>What a timed phase measures besides its clock: GC pauses, process CPU time, page faults.</summary>
    private readonly record struct PhaseMeter(TimeSpan Pause, TimeSpan Cpu, long Faults, long Started)
    {
        public static PhaseMeter Start() => new(GC.GetTotalPauseDuration(), Environment.CpuUsage.TotalTime, PageFaults.Minor(), Stopwatch.GetTimestamp());

        /// <summary>Ends the phase: sets the last phase's measurements and returns its operations per second.</summary>
        public double Stop(int operations)
        {
            var elapsed = Stopwatch.GetElapsedTime(Started);
            s_lastPauseShare = (GC.GetTotalPauseDuration() - Pause) / elapsed;
            s_lastCpuMicros = (Environment.CpuUsage.TotalTime - Cpu).TotalMicroseconds / operations;
            s_lastFaultsPerKiloOp = (PageFaults.Minor() - Faults) * 1000.0 / operations;
            return operations / elapsed.TotalSeconds;
        }
    }

    /// <summary>The three timed phases of one variant: its raw baseline, single steps, batched steps.</summary>
    private sealed class Variant
    {
        public Phase Raw { get; } = new();

        /// <summary>The consume-only variant's second baseline: the scan copies each entry out (unused by consume+OUT).</summary>
        public Phase RawCopy { get; } = new();

        /// <summary>The consume-only variant's third baseline: the in-place scan, with the commit loop truncating what was scanned (unused by consume+OUT).</summary>
        public Phase RawTruncating { get; } = new();

        /// <summary>Consume-only steps through a backlog beyond the DARQ's IN budget, read back from the log (unused by consume+OUT).</summary>
        public Phase Spilled { get; } = new();

        /// <summary>Consume-only steps through <see cref="DarqProcessor.StepAsync"/> and a reused <see cref="DarqStep"/> (unused by consume+OUT).</summary>
        public Phase General { get; } = new();

        public Phase Steps { get; } = new();

        public Phase Batched { get; } = new();

        public string Describe(string rawName) =>
            $"{rawName} {Raw.Ops[^1]:F0}/s, steps {Steps.Ops[^1]:F0}/s, batched steps {Batched.Ops[^1]:F0}/s " +
            $"(GC pauses {Raw.Pause[^1]:P0} / {Steps.Pause[^1]:P0} / {Batched.Pause[^1]:P0} of each timed phase; " +
            $"CPU {Raw.Cpu[^1]:F2} / {Steps.Cpu[^1]:F2} / {Batched.Cpu[^1]:F2} us per operation; " +
            $"page faults {Raw.Faults[^1]:F1} / {Steps.Faults[^1]:F1} / {Batched.Faults[^1]:F1} per 1,000 operations)";
    }
}
