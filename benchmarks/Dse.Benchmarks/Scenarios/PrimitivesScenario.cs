using System.Diagnostics;
using System.Runtime.InteropServices;
using Dse.Benchmarks.Harness;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// The cost of LibDse's primitives with the group-commit advance running underneath: a local action, receiving a
/// message and producing one (header parse + start + end + encode), detach + merge, and how local actions scale to a
/// second thread. Persist completes durable at once, so only the runtime is measured.
/// </summary>
public sealed class PrimitivesScenario : IScenario
{
    // Operations between two clock reads: the clock costs about as much as an action, read it rarely.
    private const int Batch = 256;

    // Distinct senders of the received headers (a power of two: the slot is an index mask).
    private const int Senders = 64;

    private const long SelfId = 1;
    private const long FirstSenderId = 1_000;

    // Below this 2-thread/1-thread ratio of the control, another process held a core during the repetition.
    private const double MinControlScaling = 1.6;

    // Keeps the encoded bytes observable so the JIT cannot drop the encoding.
    private static long s_sink;

    /// <inheritdoc />
    public string Name => "primitives";

    /// <inheritdoc />
    public string Description => "LibDse hot paths (local action, send/receive, detach+merge, 2-thread scaling) under a 10 ms background version advance.";

    /// <inheritdoc />
    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var ct = context.CancellationToken;

        // Warm-up must outlast tiered compilation's 100 ms delay so the runs measure tier-1 code.
        var warmup = context.Pick(TimeSpan.FromMilliseconds(500), TimeSpan.FromMilliseconds(300));
        var run = context.Pick(TimeSpan.FromMilliseconds(600), TimeSpan.FromMilliseconds(150));
        int runs = context.Pick(5, 3);
        var scaleRun = context.Pick(TimeSpan.FromMilliseconds(500), TimeSpan.FromMilliseconds(150));
        int scaleReps = context.Pick(5, 3);

        var coordinator = new ClusterCoordinator();
        var so = await NoopStateObject.ConnectNewAsync(coordinator, SelfId, runBackgroundTasks: true, TimeSpan.FromMilliseconds(10)).ConfigureAwait(false);
        await using (so.ConfigureAwait(false))
        {
            // The senders are registered participants (the header rules refuse any other), at a spread of versions none
            // above ours (commit ordering), so every header starts at once.
            for (int i = 0; i < Senders; i++)
            {
                await coordinator.ConnectAsync(new ConnectRequest(FirstSenderId + i, []), ct).ConfigureAwait(false);
            }

            await so.RefreshAsync(ct).ConfigureAwait(false);
            for (int i = 0; i < 7; i++)
            {
                await so.AdvanceVersionAsync(ct).ConfigureAwait(false);
            }

            byte[] incoming = EncodeIncoming(so.CurrentVersion);
            long persistedBefore = so.PersistedCount;
            var clock = Stopwatch.StartNew();

            var local = await MeasureAsync(context, "local_action", warmup, run, runs, d => LocalActionsAsync(so, d, ct)).ConfigureAwait(false);
            var sendReceive = await MeasureAsync(context, "send_receive", warmup, run, runs, d => SendReceiveAsync(so, incoming, d, ct)).ConfigureAwait(false);
            var detachMerge = await MeasureAsync(context, "detach_merge", warmup, run, runs, d => DetachMergeAsync(so, d, ct)).ConfigureAwait(false);
            var scaling = await MeasureScalingAsync(context, so, scaleRun, scaleReps).ConfigureAwait(false);

            clock.Stop();
            long advanced = so.PersistedCount - persistedBefore;
            context.Log.WriteLine($"primitives: {advanced} versions persisted in {clock.Elapsed.TotalSeconds:F1} s ({advanced / clock.Elapsed.TotalSeconds:F0}/s)");
            if (advanced == 0)
            {
                context.Log.WriteLine("primitives: WARNING the background version advance did not run; the numbers miss its cost.");
            }

            return new ScenarioResults()
                .Add("local_action_ns", local.MedianNs, 1)
                .Add("send_receive_ns", sendReceive.MedianNs, 1)
                .Add("detach_merge_ns", detachMerge.MedianNs, 1)
                .Add("local_action_scale_2t", scaling.Ratio, 2)
                .Add("local_action_1t_mops", scaling.OneThread / 1e6, 2)
                .Add("local_action_2t_mops", scaling.TwoThreads / 1e6, 2)
                .Add("control_scale_2t", scaling.ControlRatio, 2)
                .Add("scale_reps_redone", scaling.Discarded)
                .Add("slow_starts", local.SlowStarts + sendReceive.SlowStarts + detachMerge.SlowStarts + scaling.SlowStarts)
                .Add("max_deps_per_version", so.MaxDependencies)
                .Add("versions_advanced", advanced);
        }
    }

    private static byte[] EncodeIncoming(long currentVersion)
    {
        var bytes = new byte[Senders * DseHeader.OriginLength];
        for (int i = 0; i < Senders; i++)
        {
            long version = 1 + (i % currentVersion);
            DseHeader.FromOrigin(FirstSenderId + i, 0, version).WriteTo(bytes.AsSpan(i * DseHeader.OriginLength));
        }

        return bytes;
    }

    private static async Task<Measurement> MeasureAsync(ScenarioContext context, string name, TimeSpan warmup, TimeSpan run, int runs, Func<TimeSpan, Task<Sample>> loop)
    {
        await loop(warmup).ConfigureAwait(false);
        var ns = new List<double>(runs);
        long slow = 0;
        for (int i = 0; i < runs; i++)
        {
            var s = await loop(run).ConfigureAwait(false);
            ns.Add(s.NanosecondsPerOp);
            slow += s.SlowStarts;
            context.Log.WriteLine($"{name}: run {i + 1}/{runs}: {s.NanosecondsPerOp:F1} ns/op, {s.Ops} ops, {s.SlowStarts} slow starts");
        }

        return new Measurement(Stats.Median(ns), slow);
    }

    /// <summary>
    /// Ratios of 2-thread to 1-thread throughput, of local actions and of a control that shares nothing (each thread
    /// increments its own padded counter). Each repetition runs the four back to back so they see the same machine; a
    /// repetition whose control did not scale lost a core to another process and is redone, within twice the repetitions in all.
    /// </summary>
    private static async Task<Scaling> MeasureScalingAsync(ScenarioContext context, StateObject so, TimeSpan run, int reps)
    {
        var ct = context.CancellationToken;
        var counters = new PaddedCounter[2];
        Func<TimeSpan, int, Task<Sample>> actions = (d, _) => LocalActionsAsync(so, d, ct);
        Func<TimeSpan, int, Task<Sample>> control = (d, k) => Task.FromResult(SpinControl(counters, k, d));
        // One round of each to warm up: the actions are already compiled, the control and the workers are not.
        foreach (var work in new[] { actions, control })
        {
            await ThroughputAsync(1, run, work, ct).ConfigureAwait(false);
            await ThroughputAsync(2, run, work, ct).ConfigureAwait(false);
        }

        var ratios = new List<double>(reps);
        var controlRatios = new List<double>(reps);
        var one = new List<double>(reps);
        var two = new List<double>(reps);
        long slow = 0;
        int discarded = 0;
        for (int attempt = 0; ratios.Count < reps && attempt < 2 * reps; attempt++)
        {
            var c1 = await ThroughputAsync(1, run, control, ct).ConfigureAwait(false);
            var a1 = await ThroughputAsync(1, run, actions, ct).ConfigureAwait(false);
            var a2 = await ThroughputAsync(2, run, actions, ct).ConfigureAwait(false);
            var c2 = await ThroughputAsync(2, run, control, ct).ConfigureAwait(false);
            slow += a1.SlowStarts + a2.SlowStarts;
            double ratio = a2.OpsPerSecond / a1.OpsPerSecond;
            double controlRatio = c2.OpsPerSecond / c1.OpsPerSecond;
            // Redo a busy repetition only while the attempts left can still fill the quota.
            bool redo = controlRatio < MinControlScaling && (2 * reps) - attempt - 1 >= reps - ratios.Count;
            context.Log.WriteLine($"local_action_scale: rep {attempt + 1}: 1 thread {a1.OpsPerSecond / 1e6:F2} Mops/s, 2 threads {a2.OpsPerSecond / 1e6:F2} Mops/s ({ratio:F2}x); control {controlRatio:F2}x{(redo ? ": another process held a core, redoing" : string.Empty)}");
            if (redo)
            {
                discarded++;
                continue;
            }

            ratios.Add(ratio);
            controlRatios.Add(controlRatio);
            one.Add(a1.OpsPerSecond);
            two.Add(a2.OpsPerSecond);
        }

        return new Scaling(Stats.Median(ratios), Stats.Median(controlRatios), Stats.Median(one), Stats.Median(two), slow, discarded);
    }

    /// <summary>Runs <paramref name="work"/> on <paramref name="threads"/> workers released together; total operations per second.</summary>
    private static async Task<Throughput> ThroughputAsync(int threads, TimeSpan duration, Func<TimeSpan, int, Task<Sample>> work, CancellationToken ct)
    {
        using var start = new Barrier(threads);
        var workers = new Task<Sample>[threads];
        for (int i = 0; i < threads; i++)
        {
            int index = i;
            workers[i] = Task.Run(
                () =>
                {
                    // Blocks a pool thread until every worker is there; Program raises the pool's minimum for this.
                    start.SignalAndWait(ct);
                    return work(duration, index);
                },
                ct);
        }

        var samples = await Task.WhenAll(workers).ConfigureAwait(false);
        double total = 0;
        long slow = 0;
        foreach (var s in samples)
        {
            total += s.Ops / Stopwatch.GetElapsedTime(0, s.Ticks).TotalSeconds;
            slow += s.SlowStarts;
        }

        return new Throughput(total, slow);
    }

    /// <summary>The control: an interlocked increment of a counter no other thread touches.</summary>
    private static Sample SpinControl(PaddedCounter[] counters, int index, TimeSpan duration)
    {
        long start = Stopwatch.GetTimestamp();
        long deadline = start + ToTicks(duration);
        long ops = 0;
        ref long counter = ref counters[index].Value;
        do
        {
            for (int i = 0; i < Batch; i++)
            {
                Interlocked.Increment(ref counter);
            }

            ops += Batch;
        }
        while (Stopwatch.GetTimestamp() < deadline);

        return new Sample(ops, Stopwatch.GetTimestamp() - start, 0);
    }

    private static async Task<Sample> LocalActionsAsync(StateObject so, TimeSpan duration, CancellationToken ct)
    {
        long start = Stopwatch.GetTimestamp();
        long deadline = start + ToTicks(duration);
        long ops = 0;
        long slow = 0;
        while (true)
        {
            ops += SpinLocalActions(so, deadline, out bool blocked);
            if (!blocked)
            {
                break;
            }

            // A version advance holds the gate: wait for it as an application would; the wait is part of the cost.
            slow++;
            await so.StartLocalActionAsync(ct).ConfigureAwait(false);
            so.EndAction();
            ops++;
        }

        return new Sample(ops, Stopwatch.GetTimestamp() - start, slow);
    }

    private static long SpinLocalActions(StateObject so, long deadline, out bool blocked)
    {
        long ops = 0;
        do
        {
            for (int i = 0; i < Batch; i++)
            {
                if (!so.TryStartLocalAction())
                {
                    blocked = true;
                    return ops + i;
                }

                so.EndAction();
            }

            ops += Batch;
        }
        while (Stopwatch.GetTimestamp() < deadline);

        blocked = false;
        return ops;
    }

    private static async Task<Sample> SendReceiveAsync(StateObject so, byte[] incoming, TimeSpan duration, CancellationToken ct)
    {
        long start = Stopwatch.GetTimestamp();
        long deadline = start + ToTicks(duration);
        long ops = 0;
        long slow = 0;
        int next = 0;
        while (true)
        {
            ops += SpinSendReceive(so, incoming, ref next, deadline, out var pending);
            if (pending.Kind == DseHeaderKind.None)
            {
                break;
            }

            slow++;
            if (!await so.StartActionAsync(pending, ct).ConfigureAwait(false))
            {
                throw new InvalidOperationException($"A header from world-line 0 was discarded: {pending}. Nothing rolls back in this scenario.");
            }

            so.EndAction();
            ops++;
        }

        return new Sample(ops, Stopwatch.GetTimestamp() - start, slow);
    }

    /// <summary>Receives headers round-robin until the deadline or until one cannot start at once (returned in <paramref name="pending"/>).</summary>
    private static long SpinSendReceive(StateObject so, byte[] incoming, ref int next, long deadline, out DseHeader pending)
    {
        Span<byte> outgoing = stackalloc byte[DseHeader.OriginLength];
        long sink = 0;
        long ops = 0;
        do
        {
            for (int i = 0; i < Batch; i++)
            {
                int slot = next++ & (Senders - 1);
                var header = DseHeader.Parse(incoming.AsSpan(slot * DseHeader.OriginLength, DseHeader.OriginLength));
                if (so.TryStartAction(in header) != StartActionStatus.Accepted)
                {
                    pending = header;
                    Volatile.Write(ref s_sink, sink);
                    return ops + i;
                }

                sink += so.EndAction().WriteTo(outgoing) + outgoing[^1];
            }

            ops += Batch;
        }
        while (Stopwatch.GetTimestamp() < deadline);

        pending = default;
        Volatile.Write(ref s_sink, sink);
        return ops;
    }

    private static async Task<Sample> DetachMergeAsync(StateObject so, TimeSpan duration, CancellationToken ct)
    {
        long start = Stopwatch.GetTimestamp();
        long deadline = start + ToTicks(duration);
        long ops = 0;
        long slow = 0;
        while (true)
        {
            ops += SpinDetachMerge(so, deadline, out bool blocked, out var sthread);
            if (!blocked)
            {
                break;
            }

            slow++;
            if (sthread is null)
            {
                await so.StartLocalActionAsync(ct).ConfigureAwait(false);
                sthread = so.Detach();
            }

            if (!await so.MergeAsync(sthread, ct).ConfigureAwait(false))
            {
                throw new InvalidOperationException("An sthread was discarded on merge; nothing rolls back in this scenario.");
            }

            so.EndAction();
            ops++;
        }

        return new Sample(ops, Stopwatch.GetTimestamp() - start, slow);
    }

    /// <summary>
    /// Start, detach, merge, end until the deadline, or until a start or merge cannot proceed at once: then
    /// <paramref name="pending"/> is the detached sthread awaiting its merge, or null if no action started.
    /// </summary>
    private static long SpinDetachMerge(StateObject so, long deadline, out bool blocked, out Sthread? pending)
    {
        long ops = 0;
        do
        {
            for (int i = 0; i < Batch; i++)
            {
                if (!so.TryStartLocalAction())
                {
                    (blocked, pending) = (true, null);
                    return ops + i;
                }

                var sthread = so.Detach();
                if (so.TryMerge(sthread) != StartActionStatus.Accepted)
                {
                    (blocked, pending) = (true, sthread);
                    return ops + i;
                }

                so.EndAction();
            }

            ops += Batch;
        }
        while (Stopwatch.GetTimestamp() < deadline);

        (blocked, pending) = (false, null);
        return ops;
    }

    private static long ToTicks(TimeSpan duration) => (long)(duration.TotalSeconds * Stopwatch.Frequency);

    private readonly record struct Sample(long Ops, long Ticks, long SlowStarts)
    {
        public double NanosecondsPerOp => Stopwatch.GetElapsedTime(0, Ticks).TotalNanoseconds / Ops;
    }

    private readonly record struct Measurement(double MedianNs, long SlowStarts);

    private readonly record struct Throughput(double OpsPerSecond, long SlowStarts);

    private readonly record struct Scaling(double Ratio, double ControlRatio, double OneThread, double TwoThreads, long SlowStarts, int Discarded);

    // One counter per cache-line pair, as the action gate lays out its stripes.
    [StructLayout(LayoutKind.Explicit, Size = 128)]
    private struct PaddedCounter
    {
        [FieldOffset(64)]
        public long Value;
    }
}
