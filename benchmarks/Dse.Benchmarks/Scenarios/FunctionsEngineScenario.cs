using System.Diagnostics;
using Dse.Benchmarks.Harness;
using Dse.Benchmarks.Scenarios.Functions;
using Dse.Functions;
using Dse.Functions.Engine;
using MemoryPack;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// The stateful-function runtime's engine in one process, without durability (Styx's protocol alone): YCSB-T transfers
/// (debtor -1, aborting when short; creditor +1 through a one-way call) on 10,000 accounts over 2 partitions, with the
/// creditor drawn uniformly and with Zipf skew 0.99 and 0.999. A closed loop keeps a window of transactions in flight;
/// throughput is transactions with an outcome per second, latency is submit to outcome (at that window it is mostly
/// queueing; a light run with a few in flight gives the latency of one epoch). A separate run at skew 0.999
/// is replayed with the serial runner to check that it is serializable as the protocol claims.
/// </summary>
public sealed class FunctionsEngineScenario : IScenario
{
    private const int Accounts = 10_000;
    private const long InitialBalance = 1_000_000;
    private const int Window = 4_000;
    private const int LightWindow = 8;

    /// <inheritdoc />
    public string Name => "functions-engine";

    /// <inheritdoc />
    public string Description => "Dse.Functions in process: YCSB-T transfers on 10k accounts, 2 partitions, uniform / zipf 0.99 / zipf 0.999 creditors, plus a serial-oracle check.";

    /// <inheritdoc />
    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        TimeSpan warmup = context.Pick(TimeSpan.FromSeconds(1), TimeSpan.FromMilliseconds(200));
        TimeSpan measure = context.Pick(TimeSpan.FromSeconds(5), TimeSpan.FromMilliseconds(500));
        int oracleTransactions = context.Pick(30_000, 3_000);
        var results = new ScenarioResults();

        long fallbackCommits = 0;
        bool conserved = true;
        await using (var runtime = EntityRuntime.Start(o => o.Partitions = 2, e => e.Add<YcsbAccount>()))
        {
            await OpenAccountsAsync(runtime).ConfigureAwait(false);
            foreach ((string name, double theta) in new[] { ("uniform", 0.0), ("zipf99", 0.99), ("zipf999", 0.999) })
            {
                EntityRuntimeStatistics before = runtime.Statistics;
                Run run = await RunClosedLoopAsync(runtime, theta, Window, warmup, measure, seed: 42, context.CancellationToken).ConfigureAwait(false);
                EntityRuntimeStatistics after = runtime.Statistics;
                long fallback = after.FallbackCommits - before.FallbackCommits;
                if (theta == 0.999)
                {
                    fallbackCommits = fallback;
                }

                context.Log.WriteLine(
                    $"functions-engine: {name}: {run.Tps:F0} tps, p50 {run.P50Ms:F2} ms, p99 {run.P99Ms:F2} ms, {run.Aborts} aborts, " +
                    $"{after.Epochs - before.Epochs} epochs, {fallback} fallback commits, {after.Rescheduled - before.Rescheduled} rescheduled");
                results.Add($"{name}_tps", run.Tps, 0);
                results.Add($"{name}_p50_ms", run.P50Ms, 2);
                results.Add($"{name}_p99_ms", run.P99Ms, 2);
            }

            // Latency without queueing: a few transactions in flight, so each waits only for its own epoch.
            Run light = await RunClosedLoopAsync(runtime, 0.0, LightWindow, warmup, measure, seed: 43, context.CancellationToken).ConfigureAwait(false);
            context.Log.WriteLine($"functions-engine: light load ({LightWindow} in flight): {light.Tps:F0} tps, p50 {light.P50Ms:F2} ms, p99 {light.P99Ms:F2} ms");
            results.Add("light_tps", light.Tps, 0);
            results.Add("light_p50_ms", light.P50Ms, 3);
            results.Add("light_p99_ms", light.P99Ms, 3);

            var snapshot = await runtime.SnapshotAsync().ConfigureAwait(false);
            long total = snapshot.Values.Cast<YcsbBalance>().Sum(b => b.Balance);
            bool negative = snapshot.Values.Cast<YcsbBalance>().Any(b => b.Balance < 0);
            conserved = total == Accounts * InitialBalance && !negative;
            context.Log.WriteLine($"functions-engine: total balance {total} (expected {Accounts * InitialBalance}), negative balances: {negative}");
        }

        List<string> problems = await OracleRunAsync(oracleTransactions, context.CancellationToken).ConfigureAwait(false);
        foreach (string problem in problems.Take(5))
        {
            context.Log.WriteLine($"functions-engine: oracle: {problem}");
        }

        results.Add("fallback_commits", fallbackCommits);
        results.Add("serial_equal", problems.Count == 0 ? 1 : 0);
        results.Add("money_conserved", conserved ? 1 : 0);
        results.Add("oracle_transactions", oracleTransactions);
        results.Add("partitions", 2);
        results.Add("accounts", Accounts);
        results.Add("window", Window);
        results.Add("light_window", LightWindow);
        return results;
    }

    private static async Task OpenAccountsAsync(EntityRuntime runtime)
    {
        var opening = new List<Task>(Accounts);
        for (int i = 0; i < Accounts; i++)
        {
            opening.Add(runtime.Client.Get<IYcsbAccount>(i).Open(InitialBalance));
        }

        await Task.WhenAll(opening).ConfigureAwait(false);
    }

    private static async Task<Run> RunClosedLoopAsync(
        EntityRuntime runtime, double theta, int window, TimeSpan warmup, TimeSpan measure, int seed, CancellationToken ct)
    {
        var random = new Random(seed);
        var creditors = new Zipfian(Accounts, theta, new Random(seed + 1));
        var latencies = new List<double>(1 << 20);
        long measureFrom = Stopwatch.GetTimestamp() + (long)(warmup.TotalSeconds * Stopwatch.Frequency);
        long measureTo = measureFrom + (long)(measure.TotalSeconds * Stopwatch.Frequency);
        long completed = 0;
        long aborts = 0;
        using var slots = new SemaphoreSlim(window);
        var inFlight = new List<Task>();
        object gate = new();
        while (Stopwatch.GetTimestamp() < measureTo && !ct.IsCancellationRequested)
        {
            await slots.WaitAsync(ct).ConfigureAwait(false);
            int debtor = random.Next(Accounts);
            int creditor = creditors.Next();
            long start = Stopwatch.GetTimestamp();
            Task<long> transfer = runtime.Client.Get<IYcsbAccount>(debtor).Transfer(creditor, 1);
            _ = transfer.ContinueWith(
                t =>
                {
                    long end = Stopwatch.GetTimestamp();
                    slots.Release();
                    if (start < measureFrom || end > measureTo)
                    {
                        return;
                    }

                    lock (gate)
                    {
                        completed++;
                        if (t.IsFaulted)
                        {
                            aborts++;
                        }

                        latencies.Add((end - start) * 1000.0 / Stopwatch.Frequency);
                    }
                },
                CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously,
                TaskScheduler.Default);
        }

        // Let the last window drain before the next run starts.
        for (int i = 0; i < window; i++)
        {
            await slots.WaitAsync(ct).ConfigureAwait(false);
        }

        lock (gate)
        {
            latencies.Sort();
            return new Run(
                completed / measure.TotalSeconds,
                latencies.Count == 0 ? 0 : Stats.Percentile(latencies, 0.50),
                latencies.Count == 0 ? 0 : Stats.Percentile(latencies, 0.99),
                aborts);
        }
    }

    // A run at skew 0.999 submitted by names and bytes, its epochs recorded, then replayed by the serial oracle.
    private static async Task<List<string>> OracleRunAsync(int transactions, CancellationToken ct)
    {
        var log = new InMemoryEpochLog();
        var submitted = new List<(byte[] Key, string Method, byte[] Args, Task<TransactionOutcome> Outcome)>(transactions + 100);
        var random = new Random(7);
        var creditors = new Zipfian(100, 0.999, new Random(8));
        IReadOnlyDictionary<(string Entity, object Key), object?> final;
        await using (var runtime = EntityRuntime.Start(o => o.Partitions = 2, e => e.Add<YcsbAccount>(), log))
        {
            for (int i = 0; i < 100; i++)
            {
                Submit(runtime, i, "Open", MemoryPackSerializer.Serialize(5L));
            }

            await Task.WhenAll(submitted.Select(s => s.Outcome)).ConfigureAwait(false);
            for (int i = 0; i < transactions && !ct.IsCancellationRequested; i++)
            {
                Submit(runtime, random.Next(100), "Transfer", MemoryPackSerializer.Serialize((creditors.Next(), (long)random.Next(1, 4))));
                if (i % 2_000 == 1_999)
                {
                    await Task.WhenAll(submitted.Skip(submitted.Count - 2_000).Select(s => s.Outcome)).ConfigureAwait(false);
                }
            }

            await Task.WhenAll(submitted.Select(s => s.Outcome)).ConfigureAwait(false);
            final = await runtime.SnapshotAsync().ConfigureAwait(false);
        }

        var run = new List<SerialOracle.Submitted>(submitted.Count);
        foreach ((byte[] key, string method, byte[] args, Task<TransactionOutcome> outcome) in submitted)
        {
            run.Add(new SerialOracle.Submitted(nameof(YcsbAccount), key, method, args, await outcome.ConfigureAwait(false)));
        }

        return SerialOracle.Check(run, log.Records, final, e => e.Add<YcsbAccount>());

        void Submit(EntityRuntime runtime, int account, string method, byte[] args)
        {
            byte[] key = MemoryPackSerializer.Serialize(account);
            submitted.Add((key, method, args, runtime.Client.SubmitAsync(nameof(YcsbAccount), key, method, args)));
        }
    }

    private readonly record struct Run(double Tps, double P50Ms, double P99Ms, long Aborts);
}
