using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using Dse.Benchmarks.Harness;
using Dse.Storage;
using FASTER.core;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// Many FasterLogs in one process, each committing in a closed loop on local files, with FASTER's own device commit
/// manager against the same manager wrapped in <see cref="PoolSafeCommitManager"/> (what SpeculativeLog and
/// SpeculativeKv use). FASTER's manager blocks the committing pool thread on its write until a pool thread completes
/// that write; the wrapper waits where the pool can see it. Besides commits per second and commit latency, a probe
/// measures how late a 1 ms timer's continuation runs: how responsive the thread pool stayed for everything else.
/// </summary>
/// <remarks>
/// Each phase runs in a child process of its own (this program with <see cref="ChildCommand"/>), so each starts on the
/// thread pool a new process has, with the runtime's defaults: in one process the second phase would inherit the
/// threads the first one made the pool add. The pool's size at the start is what matters: once it has grown to about
/// one thread per blocked commit, FASTER's manager commits as fast as the wrapped one.
/// </remarks>
public sealed class CommitPoolScenario : IScenario
{
    /// <summary>The hidden command that runs one phase: <c>commit-pool-child faster|safe LOGS SECONDS</c>; prints one <see cref="ChildPrefix"/> line.</summary>
    public const string ChildCommand = "commit-pool-child";

    private const string ChildPrefix = "COMMIT-POOL ";

    public string Name => "commit-pool";

    public string Description => "FasterLog commits/s and thread-pool timer lag with N logs committing at once: FASTER's device commit manager vs PoolSafeCommitManager, local files.";

    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        int logs = context.Pick(16, 8);
        var duration = context.Pick(TimeSpan.FromSeconds(8), TimeSpan.FromSeconds(2));
        string directory = Directory.CreateTempSubdirectory("dse-bench-commit-pool-").FullName;
        try
        {
            var faster = await RunChildAsync("faster", Path.Combine(directory, "faster"), logs, duration, context.CancellationToken);
            context.Log.WriteLine($"commit-pool, FASTER's manager: {faster.Describe()}");
            var safe = await RunChildAsync("safe", Path.Combine(directory, "safe"), logs, duration, context.CancellationToken);
            context.Log.WriteLine($"commit-pool, PoolSafeCommitManager: {safe.Describe()}");
            return new ScenarioResults()
                .Add("logs", logs)
                .Add("seconds", duration.TotalSeconds, 1)
                .Add("faster_commits_per_s", faster.CommitsPerSecond, 0)
                .Add("safe_commits_per_s", safe.CommitsPerSecond, 0)
                .Add("speedup", safe.CommitsPerSecond / Math.Max(faster.CommitsPerSecond, 0.001), 1)
                .Add("faster_commit_p50_ms", faster.CommitP50, 2)
                .Add("safe_commit_p50_ms", safe.CommitP50, 2)
                .Add("faster_commit_p99_ms", faster.CommitP99, 2)
                .Add("safe_commit_p99_ms", safe.CommitP99, 2)
                .Add("faster_lag_p99_ms", faster.LagP99, 2)
                .Add("safe_lag_p99_ms", safe.LagP99, 2)
                .Add("faster_pool_threads", faster.Threads)
                .Add("safe_pool_threads", safe.Threads);
        }
        finally
        {
            try
            {
                Directory.Delete(directory, recursive: true);
            }
            catch (IOException)
            {
                // Left in the temporary folder.
            }
        }
    }

    /// <summary>The child process's side: measures one phase and prints it on one line.</summary>
    /// <param name="args"><c>faster|safe DIRECTORY LOGS SECONDS</c>.</param>
    public static async Task<int> RunChildAsync(string[] args)
    {
        ArgumentNullException.ThrowIfNull(args);
        if (args.Length != 4 || args[0] is not ("faster" or "safe") || !int.TryParse(args[2], CultureInfo.InvariantCulture, out int logs)
            || !double.TryParse(args[3], CultureInfo.InvariantCulture, out double seconds))
        {
            await Console.Error.WriteLineAsync($"usage: {ChildCommand} faster|safe DIRECTORY LOGS SECONDS").ConfigureAwait(false);
            return 2;
        }

        var m = await MeasureAsync(args[1], logs, TimeSpan.FromSeconds(seconds), wrap: args[0] == "safe").ConfigureAwait(false);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{ChildPrefix}{m.CommitsPerSecond} {m.CommitP50} {m.CommitP99} {m.CommitMax} {m.LagP99} {m.Threads}"));
        return 0;
    }

    private static async Task<Measurement> RunChildAsync(string variant, string directory, int logs, TimeSpan duration, CancellationToken cancellationToken)
    {
        string self = Environment.ProcessPath ?? throw new InvalidOperationException("The benchmark cannot find its own executable.");
        var start = new ProcessStartInfo(self) { RedirectStandardOutput = true, UseShellExecute = false };
        if (Path.GetFileNameWithoutExtension(self) == "dotnet")
        {
            start.ArgumentList.Add(typeof(CommitPoolScenario).Assembly.Location);
        }

        foreach (string arg in new[] { ChildCommand, variant, directory, logs.ToString(CultureInfo.InvariantCulture), duration.TotalSeconds.ToString(CultureInfo.InvariantCulture) })
        {
            start.ArgumentList.Add(arg);
        }

        using var child = Process.Start(start) ?? throw new InvalidOperationException($"Could not start {self}.");
        string output = await child.StandardOutput.ReadToEndAsync(cancellationToken).ConfigureAwait(false);
        await child.WaitForExitAsync(cancellationToken).ConfigureAwait(false);
        string? line = output.Split('\n').FirstOrDefault(l => l.StartsWith(ChildPrefix, StringComparison.Ordinal));
        if (child.ExitCode != 0 || line is null)
        {
            throw new InvalidOperationException($"The {variant} phase failed (exit code {child.ExitCode}); it printed: {output}");
        }

        var v = line[ChildPrefix.Length..].Trim().Split(' ').Select(x => double.Parse(x, CultureInfo.InvariantCulture)).ToArray();
        return new Measurement(v[0], v[1], v[2], v[3], v[4], (int)v[5]);
    }

    private static async Task<Measurement> MeasureAsync(string directory, int count, TimeSpan duration, bool wrap)
    {
        var logs = new List<(FasterLog Log, IDevice Device, ILogCommitManager Manager)>();
        try
        {
            for (int i = 0; i < count; i++)
            {
                var inner = new DeviceLogCommitCheckpointManager(new LocalStorageNamedDeviceFactory(), new DefaultCheckpointNamingScheme(Path.Combine(directory, $"commits-{i}")));
                ILogCommitManager manager = wrap ? new PoolSafeCommitManager(inner) : inner;
                var device = DseDevices.CreateLocalFile(Path.Combine(directory, $"log-{i}.log"));
                logs.Add((new FasterLog(new FasterLogSettings
                {
                    LogDevice = device,
                    PageSize = 1L << 16,
                    MemorySize = 1L << 20,
                    LogCommitManager = manager,
                    AutoCommit = false,
                }), device, manager));
            }

            var commits = new ConcurrentQueue<double>();
            var lags = new ConcurrentQueue<double>();
            var clock = Stopwatch.StartNew();
            var probe = Task.Run(async () =>
            {
                while (clock.Elapsed < duration)
                {
                    long start = Stopwatch.GetTimestamp();
                    await Task.Delay(1).ConfigureAwait(false);
                    lags.Enqueue(Stopwatch.GetElapsedTime(start).TotalMilliseconds - 1);
                }
            });
            var loops = logs.Select(entry => Task.Run(async () =>
            {
                var payload = new byte[100];
                while (clock.Elapsed < duration)
                {
                    entry.Log.Enqueue(payload);
                    long start = Stopwatch.GetTimestamp();
                    await entry.Log.CommitAsync().ConfigureAwait(false);
                    commits.Enqueue(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
                }
            })).ToList();
            await Task.WhenAll(loops).ConfigureAwait(false);
            await probe.ConfigureAwait(false);
            var elapsed = clock.Elapsed;
            var sortedCommits = commits.Order().ToArray();
            var sortedLags = lags.Order().ToArray();
            return new Measurement(sortedCommits.Length / elapsed.TotalSeconds, Percentile(sortedCommits, 0.5), Percentile(sortedCommits, 0.99),
                sortedCommits.Length == 0 ? 0 : sortedCommits[^1], Percentile(sortedLags, 0.99), ThreadPool.ThreadCount);
        }
        finally
        {
            foreach (var (log, device, manager) in logs)
            {
                log.Dispose();
                manager.Dispose();
                device.Dispose();
            }
        }
    }

    private static double Percentile(double[] sorted, double p) =>
        sorted.Length == 0 ? 0 : sorted[Math.Clamp((int)Math.Ceiling(p * sorted.Length) - 1, 0, sorted.Length - 1)];

    private sealed record Measurement(double CommitsPerSecond, double CommitP50, double CommitP99, double CommitMax, double LagP99, int Threads)
    {
        public string Describe() =>
            $"{CommitsPerSecond:F0} commits/s, commit p50 {CommitP50:F2} ms, p99 {CommitP99:F2} ms, max {CommitMax:F0} ms; timer lag p99 {LagP99:F2} ms; {Threads} pool threads";
    }
}
