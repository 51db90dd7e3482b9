using System.Diagnostics;
using Dse.Benchmarks.Harness;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// <see cref="ClusterCoordinator"/> under the setup of libDPR's finder microbenchmark: 64 simulated participants,
/// dependency probability 0.2, a 10 ms persist period. Measures the report throughput of a tight loop and, with the
/// period paced in real time, the lag from a report to the published boundary covering it. Persists are instantaneous,
/// so everything measured is the coordinator's. The throughput loops also run with 1024 participants at the same number
/// of dependencies per report. docs/benchmarks.md (## coordinator) defines the dependency model.
/// </summary>
public sealed class CoordinatorScenario : IScenario
{
    private const int Participants = 64;
    private const double DependencyProbability = 0.2;
    private const long FirstId = 1;

    // The scaled cluster: dependencies per report stay at 0.2 x 63 = 12.6, so only the cluster size changes.
    private const int LargeParticipants = 1024;

    // Connected after a paced run: its publish tells the observer that every report before it has been seen.
    private const long SentinelId = 1_000_000;

    // Precomputed dependency sets (the peers to depend on), so the drive loop spends nothing on random numbers.
    private const int MaskCount = 1 << 14;
    private const int Seed = 20_240_601;

    // The throughput loop samples the uncommitted backlog every this many reports: a prime, so the samples fall at every
    // position of the round-robin round (the backlog of same-version dependencies empties at the end of each round).
    private const int ReportsPerSample = 1021;

    private static readonly TimeSpan PersistPeriod = TimeSpan.FromMilliseconds(10);

    /// <summary>Where a version's dependencies point.</summary>
    private enum Target
    {
        /// <summary>The peer's latest reported (persisted) version; the reporter bumps its version to at least that.</summary>
        Persisted,

        /// <summary>libDPR's uniform generator: the peer's version with the reporter's own number, persisted or not.</summary>
        SameVersion,
    }

    /// <inheritdoc />
    public string Name => "coordinator";

    /// <inheritdoc />
    public string Description => "ClusterCoordinator: version reports/s and report-to-boundary lag; 64 simulated participants, dependency probability 0.2, 10 ms persist period.";

    /// <inheritdoc />
    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var ct = context.CancellationToken;

        // Warm-up must outlast tiered compilation's 100 ms delay so the runs measure tier-1 code.
        var warmup = context.Pick(TimeSpan.FromMilliseconds(500), TimeSpan.FromMilliseconds(300));
        var run = context.Pick(TimeSpan.FromMilliseconds(500), TimeSpan.FromMilliseconds(150));
        int runs = context.Pick(5, 3);
        var paced = context.Pick(TimeSpan.FromSeconds(2), TimeSpan.FromMilliseconds(600));
        int pacedRuns = context.Pick(3, 1);

        var masks = new Masks(Participants, DependencyProbability, Seed);
        var large = new Masks(LargeParticipants, DependencyProbability * (Participants - 1) / (LargeParticipants - 1), Seed);
        var clock = Stopwatch.StartNew();

        // Every loop once, briefly, then one long warm-up: tiering's delay restarts whenever a new method is jitted, so
        // the long warm-up only counts once nothing new runs (a warm-up per loop would leave the first run at tier 0).
        var touch = TimeSpan.FromMilliseconds(30);
        await DriveAsync(Target.Persisted, masks, null, 1, touch, ct).ConfigureAwait(false);
        await DriveAsync(Target.Persisted, masks, NewCoordinator(), 2, touch, ct).ConfigureAwait(false);
        await DriveAsync(Target.SameVersion, masks, NewCoordinator(), 1, touch, ct).ConfigureAwait(false);
        await DriveAsync(Target.Persisted, large, NewCoordinator(), 1, touch, ct).ConfigureAwait(false);
        await DriveAsync(Target.Persisted, masks, NewCoordinator(), 1, warmup, ct).ConfigureAwait(false);

        // Throughput: the four loops back to back in each repetition, so they see the same machine.
        var driver = new List<Drive>(runs);
        var persisted = new List<Drive>(runs);
        var twoThreads = new List<Drive>(runs);
        var sameVersion = new List<Drive>(runs);
        for (int i = 0; i < runs; i++)
        {
            driver.Add(await DriveAsync(Target.Persisted, masks, null, 1, run, ct).ConfigureAwait(false));
            persisted.Add(await DriveAsync(Target.Persisted, masks, NewCoordinator(), 1, run, ct).ConfigureAwait(false));
            twoThreads.Add(await DriveAsync(Target.Persisted, masks, NewCoordinator(), 2, run, ct).ConfigureAwait(false));
            sameVersion.Add(await DriveAsync(Target.SameVersion, masks, NewCoordinator(), 1, run, ct).ConfigureAwait(false));
            context.Log.WriteLine(
                $"throughput: run {i + 1}/{runs}: {persisted[i].PerSecond / 1e3:F1}k reports/s (1 thread), {twoThreads[i].PerSecond / 1e3:F1}k/s (2 threads), "
                + $"{sameVersion[i].PerSecond / 1e3:F1}k/s (libDPR same-version deps, {sameVersion[i].UncommittedAvg:F1} uncommitted); "
                + $"driver alone {driver[i].NanosecondsPerReport:F0} ns/report; coordinator {persisted[i].BytesPerReport - driver[i].BytesPerReport:F0} B/report");
        }

        // The same loops over 1024 participants (1 thread), after the 64-participant ones so that they see tier-1 code.
        var largePersisted = new List<Drive>(runs);
        var largeSameVersion = new List<Drive>(runs);
        for (int i = 0; i < runs; i++)
        {
            largePersisted.Add(await DriveAsync(Target.Persisted, large, NewCoordinator(), 1, run, ct).ConfigureAwait(false));
            largeSameVersion.Add(await DriveAsync(Target.SameVersion, large, NewCoordinator(), 1, run, ct).ConfigureAwait(false));
            context.Log.WriteLine(
                $"throughput, {LargeParticipants} participants: run {i + 1}/{runs}: {largePersisted[i].PerSecond / 1e3:F1}k reports/s "
                + $"({largePersisted[i].DepsAvg:F2} deps/report), {largeSameVersion[i].PerSecond / 1e3:F1}k/s (libDPR same-version deps, "
                + $"{largeSameVersion[i].UncommittedAvg:F1} uncommitted)");
        }

        // Boundary lag: 64 participants on their own 10 ms timers, staggered, one observer of the published state.
        await PacedAsync(Target.Persisted, masks, TimeSpan.FromMilliseconds(300), ct).ConfigureAwait(false);
        var lags = new List<Paced>(pacedRuns);
        var sameVersionLags = new List<Paced>(pacedRuns);
        for (int i = 0; i < pacedRuns; i++)
        {
            lags.Add(await PacedAsync(Target.Persisted, masks, paced, ct).ConfigureAwait(false));
            sameVersionLags.Add(await PacedAsync(Target.SameVersion, masks, paced, ct).ConfigureAwait(false));
            context.Log.WriteLine(
                $"paced: run {i + 1}/{pacedRuns}: {lags[i].Reports} reports, boundary lag p50 {lags[i].LagP50Ms:F3} ms p99 {lags[i].LagP99Ms:F3} ms "
                + $"(report call p50 {lags[i].CallP50Us:F1} us), {lags[i].Uncovered} never covered; libDPR same-version deps: commit latency p50 "
                + $"{sameVersionLags[i].LagP50Ms:F2} ms p99 {sameVersionLags[i].LagP99Ms:F2} ms");
        }

        clock.Stop();
        long uncovered = 0;
        foreach (var l in lags)
        {
            uncovered += l.Uncovered;
        }

        if (uncovered > 0)
        {
            context.Log.WriteLine($"coordinator: WARNING {uncovered} reported versions were never covered by the boundary; with persisted dependencies every one should be.");
        }

        context.Log.WriteLine($"coordinator: {clock.Elapsed.TotalSeconds:F1} s");
        double reportsPerSecond = Stats.Median(Select(persisted, d => d.PerSecond));
        double driverNs = Stats.Median(Select(driver, d => d.NanosecondsPerReport));
        return new ScenarioResults()
            .Add("reports_per_s", reportsPerSecond, 0)
            .Add("boundary_lag_p50_ms", Stats.Median(Select(lags, l => l.LagP50Ms)), 4)
            .Add("boundary_lag_p99_ms", Stats.Median(Select(lags, l => l.LagP99Ms)), 4)
            .Add("report_call_p50_us", Stats.Median(Select(lags, l => l.CallP50Us)), 1)
            .Add("participants", Participants)
            .Add("dep_probability", DependencyProbability, 2)
            .Add("persist_period_ms", PersistPeriod.TotalMilliseconds, 0)
            .Add("deps_per_report_avg", Stats.Median(Select(persisted, d => d.DepsAvg)), 2)
            .Add("uncommitted_avg", Stats.Median(Select(persisted, d => d.UncommittedAvg)), 2)
            .Add("report_ns", 1e9 / reportsPerSecond, 0)
            .Add("driver_ns_per_report", driverNs, 0)
            .Add("coordinator_bytes_per_report", Stats.Median(Select(persisted, d => d.BytesPerReport)) - Stats.Median(Select(driver, d => d.BytesPerReport)), 0)
            .Add("reports_per_s_2t", Stats.Median(Select(twoThreads, d => d.PerSecond)), 0)
            .Add("reports_per_s_libdpr", Stats.Median(Select(sameVersion, d => d.PerSecond)), 0)
            .Add("uncommitted_avg_libdpr", Stats.Median(Select(sameVersion, d => d.UncommittedAvg)), 1)
            .Add("commit_latency_libdpr_p50_ms", Stats.Median(Select(sameVersionLags, l => l.LagP50Ms)), 2)
            .Add("large_participants", LargeParticipants)
            .Add("reports_per_s_1024", Stats.Median(Select(largePersisted, d => d.PerSecond)), 0)
            .Add("reports_per_s_libdpr_1024", Stats.Median(Select(largeSameVersion, d => d.PerSecond)), 0)
            .Add("deps_per_report_avg_1024", Stats.Median(Select(largePersisted, d => d.DepsAvg)), 2)
            .Add("lag_samples", Sum(lags, l => l.Reports))
            .Add("lag_uncovered", uncovered);
    }

    private static ClusterCoordinator NewCoordinator() => new();

    private static long Id(int participant) => FirstId + participant;

    private static async Task ConnectAllAsync(ClusterCoordinator coordinator, int participants, CancellationToken ct)
    {
        for (int i = 0; i < participants; i++)
        {
            await coordinator.ConnectAsync(new ConnectRequest(Id(i), []), ct).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Reports as fast as <paramref name="threads"/> workers can, each driving its share of the participants round-robin,
    /// for <paramref name="duration"/>. Without a coordinator the loop builds the same reports and drops them: the baseline.
    /// </summary>
    private static async Task<Drive> DriveAsync(Target target, Masks masks, ClusterCoordinator? coordinator, int threads, TimeSpan duration, CancellationToken ct)
    {
        if (coordinator is not null)
        {
            await ConnectAllAsync(coordinator, masks.Participants, ct).ConfigureAwait(false);
        }

        var cluster = new Cluster(target, masks);
        using var start = new Barrier(threads);
        var workers = new Task<Drive>[threads];
        for (int t = 0; t < threads; t++)
        {
            int thread = t;
            workers[t] = Task.Run(
                () =>
                {
                    // Blocks a pool thread until every worker is there; Program raises the pool's minimum for this.
                    start.SignalAndWait(ct);
                    return DriveWorkerAsync(cluster, coordinator, thread, threads, duration, ct);
                },
                ct);
        }

        var samples = await Task.WhenAll(workers).ConfigureAwait(false);
        var total = default(Drive);
        foreach (var s in samples)
        {
            total = total.Merge(s);
        }

        return total;
    }

    private static async Task<Drive> DriveWorkerAsync(Cluster cluster, ClusterCoordinator? coordinator, int thread, int threads, TimeSpan duration, CancellationToken ct)
    {
        var worker = new Worker(cluster, coordinator, thread, threads);
        long deadline = Stopwatch.GetTimestamp() + ToTicks(duration);
        while (!worker.Spin(deadline, out var pending))
        {
            // ClusterCoordinator completes every report synchronously; a coordinator that does not is awaited here.
            worker.Completed(await pending.ConfigureAwait(false));
            ct.ThrowIfCancellationRequested();
        }

        return worker.Result();
    }

    /// <summary>
    /// One paced run: every participant persists on its own 10 ms timer (phases staggered across the period) and reports
    /// at once; an observer waits for each published state. A version's lag runs from the start of its report to the
    /// observer seeing a boundary that covers it.
    /// </summary>
    private static async Task<Paced> PacedAsync(Target target, Masks masks, TimeSpan duration, CancellationToken ct)
    {
        var coordinator = NewCoordinator();
        await ConnectAllAsync(coordinator, Participants, ct).ConfigureAwait(false);
        var cluster = new Cluster(target, masks);
        var observer = ObserveAsync(coordinator, ct);
        long start = Stopwatch.GetTimestamp();
        long deadline = start + ToTicks(duration);
        var participants = new Task<List<Timing>>[Participants];
        for (int i = 0; i < Participants; i++)
        {
            var phase = PersistPeriod * i / Participants;
            participants[i] = ParticipantAsync(coordinator, cluster, i, phase, start, deadline, ct);
        }

        var reports = await Task.WhenAll(participants).ConfigureAwait(false);
        await coordinator.ConnectAsync(new ConnectRequest(SentinelId, []), ct).ConfigureAwait(false);
        var commits = await observer.ConfigureAwait(false);

        var lags = new List<double>();
        var calls = new List<double>();
        long uncovered = 0;
        for (int i = 0; i < Participants; i++)
        {
            int k = 0;
            foreach (var r in reports[i])
            {
                calls.Add(Stopwatch.GetElapsedTime(r.Start, r.End).TotalMicroseconds);
                while (k < commits[i].Count && commits[i][k].Committed < r.Version)
                {
                    k++;
                }

                if (k == commits[i].Count)
                {
                    uncovered++;
                    continue;
                }

                Debug.Assert(commits[i][k].Seen >= r.Start, "A version cannot be covered before it is reported.");
                lags.Add(Stopwatch.GetElapsedTime(r.Start, commits[i][k].Seen).TotalMilliseconds);
            }
        }

        if (lags.Count == 0)
        {
            throw new InvalidOperationException($"No reported version of the {target} run was covered by the boundary; the run was too short or the coordinator stalled.");
        }

        lags.Sort();
        calls.Sort();
        return new Paced(calls.Count, uncovered, Percentile(lags, 0.50), Percentile(lags, 0.99), Percentile(calls, 0.50));
    }

    private static async Task<List<Timing>> ParticipantAsync(ClusterCoordinator coordinator, Cluster cluster, int i, TimeSpan phase, long start, long deadline, CancellationToken ct)
    {
        // Phases are spread over the period; the timer's resolution (about 1 ms) groups them into a few bunches.
        await Task.Delay(phase, ct).ConfigureAwait(false);
        using var timer = new PeriodicTimer(PersistPeriod);
        var timings = new List<Timing>(1 + (int)(Stopwatch.GetElapsedTime(start, deadline) / PersistPeriod));
        int cursor = i * 97;
        long periodTicks = ToTicks(PersistPeriod);
        while (await timer.WaitForNextTickAsync(ct).ConfigureAwait(false))
        {
            long now = Stopwatch.GetTimestamp();
            if (now >= deadline)
            {
                break;
            }

            // libDPR numbers versions by the clock (1 + elapsed / period), so same-number dependencies line up across peers.
            long clockVersion = cluster.Target == Target.SameVersion ? 1 + ((now - start) / periodTicks) : 0;
            var report = cluster.Next(i, clockVersion, ref cursor, out _);
            long t0 = Stopwatch.GetTimestamp();
            var outcome = await coordinator.ReportPersistedAsync(Id(i), report, ct).ConfigureAwait(false);
            long t1 = Stopwatch.GetTimestamp();
            Cluster.Check(i, report, outcome);
            cluster.Reported(i, report.Version);
            timings.Add(new Timing(report.Version, t0, t1));
        }

        return timings;
    }

    /// <summary>Records, per participant, each rise of its published committed version and when the observer saw it.</summary>
    private static async Task<List<Commit>[]> ObserveAsync(ClusterCoordinator coordinator, CancellationToken ct)
    {
        var commits = new List<Commit>[Participants];
        var seen = new long[Participants];
        for (int i = 0; i < Participants; i++)
        {
            commits[i] = [];
        }

        long epoch = 0;
        while (true)
        {
            var state = await coordinator.WaitForChangeAsync(epoch, ct).ConfigureAwait(false);
            long now = Stopwatch.GetTimestamp();
            epoch = state.Epoch;
            for (int i = 0; i < Participants; i++)
            {
                long committed = state.CommittedVersion(Id(i));
                if (committed > seen[i])
                {
                    seen[i] = committed;
                    commits[i].Add(new Commit(committed, now));
                }
            }

            // The sentinel connects after the last report returned: this state includes everything reported.
            if (state.Committed.ContainsKey(SentinelId))
            {
                return commits;
            }
        }
    }

    /// <summary>Nearest-rank percentile of sorted samples.</summary>
    private static double Percentile(List<double> sorted, double q)
    {
        int rank = (int)Math.Ceiling(q * sorted.Count);
        return sorted[Math.Clamp(rank - 1, 0, sorted.Count - 1)];
    }

    private static List<double> Select<T>(List<T> items, Func<T, double> value)
    {
        var result = new List<double>(items.Count);
        foreach (var item in items)
        {
            result.Add(value(item));
        }

        return result;
    }

    private static long Sum<T>(List<T> items, Func<T, long> value)
    {
        long sum = 0;
        foreach (var item in items)
        {
            sum += value(item);
        }

        return sum;
    }

    private static long ToTicks(TimeSpan duration) => (long)(duration.TotalSeconds * Stopwatch.Frequency);

    /// <summary>
    /// Precomputed dependency sets over <paramref name="participants"/>: each peer j is in a set with probability
    /// <paramref name="probability"/>, independently (the reporter skips itself), from a fixed seed, so every run draws the
    /// same sets.
    /// </summary>
    private sealed class Masks(int participants, double probability, int seed)
    {
        public int Participants { get; } = participants;

        public int[][] Sets { get; } = Draw(participants, probability, seed);

        private static int[][] Draw(int participants, double probability, int seed)
        {
            var random = new Random(seed);
            var sets = new int[MaskCount][];
            var set = new List<int>();
            for (int m = 0; m < sets.Length; m++)
            {
                set.Clear();
                for (int j = 0; j < participants; j++)
                {
                    if (random.NextDouble() < probability)
                    {
                        set.Add(j);
                    }
                }

                sets[m] = [.. set];
            }

            return sets;
        }
    }

    /// <summary>The simulated participants' shared view: each one's latest reported version and the dependency sets.</summary>
    private sealed class Cluster(Target target, Masks masks)
    {
        // _latest[i] is written only by participant i's driver, after the coordinator accepted the version; peers read it.
        private readonly long[] _latest = new long[masks.Participants];

        public int Participants => masks.Participants;

        public Target Target { get; } = target;

        /// <summary>
        /// Participant <paramref name="i"/>'s next report: a dependency on each peer in the next set, the version one above
        /// its last, raised to <paramref name="floor"/> and to every dependency (commit ordering).
        /// </summary>
        public VersionReport Next(int i, long floor, ref int cursor, out int dependencies)
        {
            int[] set = masks.Sets[cursor++ & (MaskCount - 1)];
            long version = Math.Max(_latest[i] + 1, floor);
            var deps = new Dependency[Array.BinarySearch(set, i) >= 0 ? set.Length - 1 : set.Length];
            int n = 0;
            foreach (int j in set)
            {
                if (j == i)
                {
                    continue;
                }

                if (Target == Target.SameVersion)
                {
                    deps[n++] = new Dependency(Id(j), version);
                    continue;
                }

                // A peer that has reported nothing yet has nothing to depend on (only in the first round).
                long latest = Volatile.Read(ref _latest[j]);
                if (latest > 0)
                {
                    deps[n++] = new Dependency(Id(j), latest);
                    version = Math.Max(version, latest);
                }
            }

            if (n < deps.Length)
            {
                Array.Resize(ref deps, n);
            }

            dependencies = n;
            return new VersionReport(version, 0, deps);
        }

        public void Reported(int i, long version) => Volatile.Write(ref _latest[i], version);

        public static void Check(int i, VersionReport report, ReportOutcome outcome)
        {
            if (outcome != ReportOutcome.Accepted)
            {
                throw new InvalidOperationException($"The coordinator answered {outcome} to participant {Id(i)}'s version {report.Version}; every report in this scenario is new.");
            }
        }
    }

    /// <summary>One thread's share of the throughput loop: participants thread, thread + threads, ... round-robin.</summary>
    private sealed class Worker
    {
        private readonly Cluster _cluster;
        private readonly ClusterCoordinator? _coordinator;
        private readonly int[] _mine;

        // Per driven participant, its reported versions not yet seen committed (oldest first).
        private readonly Queue<long>[] _unconfirmed;
        private readonly long _started = Stopwatch.GetTimestamp();
        private int _next;
        private int _cursor;
        private int _untilSample = ReportsPerSample;
        private long _reports;
        private long _dependencies;
        private long _bytes;
        private long _samples;
        private long _uncommitted;
        private VersionReport? _pending;
        private int _pendingParticipant;

        public Worker(Cluster cluster, ClusterCoordinator? coordinator, int thread, int threads)
        {
            _cluster = cluster;
            _coordinator = coordinator;
            _mine = new int[(cluster.Participants - thread + threads - 1) / threads];
            _unconfirmed = new Queue<long>[_mine.Length];
            for (int k = 0; k < _mine.Length; k++)
            {
                _mine[k] = thread + (k * threads);
                _unconfirmed[k] = new Queue<long>();
            }

            _cursor = thread * 7919;
        }

        /// <summary>Reports until the deadline (true) or until a report does not complete synchronously (false, in <paramref name="pending"/>).</summary>
        public bool Spin(long deadline, out ValueTask<ReportOutcome> pending)
        {
            long allocated = GC.GetAllocatedBytesForCurrentThread();
            try
            {
                do
                {
                    for (int r = 0; r < _mine.Length; r++)
                    {
                        int k = _next;
                        _next = k + 1 == _mine.Length ? 0 : k + 1;
                        var report = _cluster.Next(_mine[k], 0, ref _cursor, out int deps);
                        _dependencies += deps;
                        if (_coordinator is null)
                        {
                            Record(k, report);
                            continue;
                        }

                        var outcome = _coordinator.ReportPersistedAsync(Id(_mine[k]), report);
                        if (!outcome.IsCompletedSuccessfully)
                        {
                            (_pending, _pendingParticipant, pending) = (report, k, outcome);
                            return false;
                        }

                        Cluster.Check(_mine[k], report, outcome.Result);
                        Record(k, report);
                        if (--_untilSample == 0)
                        {
                            _untilSample = ReportsPerSample;
                            SampleUncommitted(_coordinator.State);
                        }
                    }
                }
                while (Stopwatch.GetTimestamp() < deadline);

                pending = default;
                return true;
            }
            finally
            {
                _bytes += GC.GetAllocatedBytesForCurrentThread() - allocated;
            }
        }

        /// <summary>Records the report <see cref="Spin"/> handed back once it completed.</summary>
        public void Completed(ReportOutcome outcome)
        {
            var report = _pending ?? throw new InvalidOperationException("No report is pending.");
            Cluster.Check(_mine[_pendingParticipant], report, outcome);
            Record(_pendingParticipant, report);
            _pending = null;
        }

        public Drive Result()
        {
            double seconds = Stopwatch.GetElapsedTime(_started).TotalSeconds;
            return new Drive(_reports, seconds, _dependencies, _bytes, _samples == 0 ? 0 : (double)_uncommitted / _samples);
        }

        private void Record(int k, VersionReport report)
        {
            _cluster.Reported(_mine[k], report.Version);
            if (_coordinator is not null)
            {
                _unconfirmed[k].Enqueue(report.Version);
            }

            _reports++;
        }

        /// <summary>Adds to the backlog the versions of this worker's participants reported but not yet committed.</summary>
        private void SampleUncommitted(ClusterState state)
        {
            for (int k = 0; k < _mine.Length; k++)
            {
                long committed = state.CommittedVersion(Id(_mine[k]));
                var queue = _unconfirmed[k];
                while (queue.Count > 0 && queue.Peek() <= committed)
                {
                    queue.Dequeue();
                }

                _uncommitted += queue.Count;
            }

            _samples++;
        }
    }

    /// <summary>A throughput loop's totals; merging sums the workers (their rates add, their backlogs add).</summary>
    private readonly record struct Drive(long Reports, double Seconds, long Dependencies, long Bytes, double UncommittedAvg)
    {
        public double PerSecond => Seconds == 0 ? 0 : Reports / Seconds;

        public double NanosecondsPerReport => Seconds * 1e9 / Reports;

        public double DepsAvg => (double)Dependencies / Reports;

        public double BytesPerReport => (double)Bytes / Reports;

        public Drive Merge(Drive other) =>
            Reports == 0 ? other : new Drive(Reports + other.Reports, Math.Max(Seconds, other.Seconds), Dependencies + other.Dependencies, Bytes + other.Bytes, UncommittedAvg + other.UncommittedAvg);
    }

    private readonly record struct Paced(long Reports, long Uncovered, double LagP50Ms, double LagP99Ms, double CallP50Us);

    private readonly record struct Timing(long Version, long Start, long End);

    private readonly record struct Commit(long Committed, long Seen);
}
