using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Text;
using Dse.Darq;
using Dse.Storage;

namespace Dse.Samples.SearchTrend;

/// <summary>
/// The DARQ paper's search-trend example, small: three DARQs on local files, <c>filter</c> -> <c>count</c> ->
/// <c>alert</c>, each with a co-located processor, connected by OUT delivery. A source sends search events one window at
/// a time, deduplicated by (producer, sequence number), and waits until the alert stage's summary of that window can
/// never be lost (<see cref="Darq.Darq.WaitForRecoverableAsync"/>, the barrier for anything outside the pipeline).
/// </summary>
public sealed class SearchTrendPipeline : IAsyncDisposable
{
    private const long SourceProducer = 1;
    private static readonly string[] StageNames = ["filter", "count", "alert"];

    /// <summary>How long a window may take end to end before the run gives up and says what it saw.</summary>
    private static readonly TimeSpan WindowTimeout = TimeSpan.FromSeconds(60);

    private readonly SearchTrendOptions _options;
    private readonly string _directory;
    private readonly bool _ownsDirectory;
    private readonly DarqDestinationRegistry _registry = new();
    private readonly ClusterCoordinator? _coordinator;
    private readonly Dictionary<string, Darq.Darq> _darqs = new(StringComparer.Ordinal);
    private readonly Dictionary<string, StageRunner> _runners = new(StringComparer.Ordinal);
    private readonly AlertStage _alert;
    private readonly ConcurrentDictionary<int, TaskCompletionSource> _windowDone = new();
    private long _nextSequence = 1;

    private SearchTrendPipeline(SearchTrendOptions options)
    {
        _options = options;
        _ownsDirectory = options.DataDirectory is null;
        _directory = Path.Combine(options.DataDirectory ?? Path.GetTempPath(), $"dse-search-trend-{options.Speculation}-{Guid.NewGuid():N}".ToLowerInvariant());
        Directory.CreateDirectory(_directory);
        _coordinator = options.Speculation == DarqSpeculationMode.General ? new ClusterCoordinator() : null;
        _alert = new AlertStage(options.Threshold);
        _runners["filter"] = new StageRunner("filter", new FilterStage());
        _runners["count"] = new StageRunner("count", new CountStage());
        _runners["alert"] = new StageRunner("alert", _alert, OnAlertStepped, OnAlertLoaded);
    }

    /// <summary>The chaos actions taken, in order.</summary>
    public List<string> Events { get; } = [];

    /// <summary>The alert stage's state; once <see cref="RunAsync"/> returned, all of it is recoverable.</summary>
    public AlertState Result => _alert.State;

    /// <summary>Processors registered per stage (more than one after a kill or a rollback).</summary>
    public IReadOnlyDictionary<string, int> Registrations => _runners.ToDictionary(r => r.Key, r => r.Value.Registrations);

    /// <summary>Opens the three DARQs (under general speculation, as StateObjects of one in-process coordinator) and starts their processors.</summary>
    public static async Task<SearchTrendPipeline> StartAsync(SearchTrendOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        var pipeline = new SearchTrendPipeline(options);
        try
        {
            for (int i = 0; i < StageNames.Length; i++)
            {
                var darq = await pipeline.OpenAsync(StageNames[i], i + 1);
                pipeline._darqs[StageNames[i]] = darq;
                pipeline._registry.Add(darq);
            }

            foreach (var (name, runner) in pipeline._runners)
            {
                runner.Start(pipeline._darqs[name]);
            }

            return pipeline;
        }
        catch
        {
            await pipeline.DisposeAsync();
            throw;
        }
    }

    /// <summary>
    /// Sends every window, one at a time, and returns each one's latency: from enqueueing its watermark at the filter to
    /// its summary being recoverable at the alert stage. The first window warms the pipeline up (code compiled on first
    /// use) and is not timed. With <see cref="SearchTrendOptions.Chaos"/>, kills and restarts on the way.
    /// </summary>
    public async Task<double[]> RunAsync(IReadOnlyList<List<string>> windows, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(windows);
        var latencies = new List<double>(windows.Count);
        for (int window = 0; window < windows.Count; window++)
        {
            var done = _windowDone.GetOrAdd(window, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
            var lines = windows[window];
            long start = 0;
            for (int i = 0; i < lines.Count; i++)
            {
                if (_options.Chaos && window == windows.Count / 3 && i == lines.Count / 2)
                {
                    Events.Add($"window {window}, half of it sent: killed the count stage's processor");
                    _runners["count"].KillProcessor();
                }

                start = Stopwatch.GetTimestamp();
                await _darqs["filter"].EnqueueAsync(SourceProducer, _nextSequence++, Encoding.UTF8.GetBytes(lines[i]), cancellationToken);
            }

            if (_options.Chaos && window == 2 * windows.Count / 3 && _coordinator is null)
            {
                Events.Add($"window {window}, all of it sent: restarted the alert DARQ from its files");
                await RestartAsync("alert");
            }

            try
            {
                await done.Task.WaitAsync(WindowTimeout, cancellationToken);
            }
            catch (TimeoutException e)
            {
                var faults = _runners.Values.Where(r => r.Fault is not null).Select(r => $"{r.Name}: {r.Fault!.Message}").ToList();
                throw new InvalidOperationException(
                    $"Window {window} did not reach the alert stage within {WindowTimeout.TotalSeconds} s" +
                    (faults.Count > 0 ? $"; failed processor loops: {string.Join("; ", faults)}" : "; no processor loop failed") + ".", e);
            }

            if (window > 0)
            {
                latencies.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
            }
        }

        return [.. latencies];
    }

    /// <summary>Closes one DARQ and opens it again on the same files, as after a restart of its process; its processor registers again.</summary>
    private async Task RestartAsync(string name)
    {
        var runner = _runners[name];
        await runner.StopAsync();
        _registry.Remove(name);
        await _darqs[name].DisposeAsync();
        var reopened = await OpenAsync(name, Array.IndexOf(StageNames, name) + 1);
        _darqs[name] = reopened;
        _registry.Add(reopened);
        runner.Start(reopened);
    }

    /// <summary>An alert step closed a window: the window is done once that step is recoverable.</summary>
    private void OnAlertStepped(Darq.Darq darq, string summary, DarqStepResult result)
    {
        int window = WindowOf(summary);
        _ = SignalWhenRecoverableAsync(darq, result.DurableAt - 1, window);
    }

    /// <summary>
    /// A new alert processor got its state from the replay: every window in it is done once that state is recoverable.
    /// A restart can cut short the wait of the step that closed a window (the DARQ closed under it) while the step itself
    /// survives; the window is signalled from the replayed state then.
    /// </summary>
    private void OnAlertLoaded(Darq.Darq darq, long stateLsn)
    {
        foreach (var summary in _alert.State.Windows)
        {
            int window = WindowOf(summary);
            if (_windowDone.TryGetValue(window, out var done) && done.Task.IsCompleted)
            {
                continue;
            }

            _ = SignalWhenRecoverableAsync(darq, stateLsn, window);
        }
    }

    /// <summary>The window number a summary ("k term=c;...") starts with.</summary>
    private static int WindowOf(string summary) => int.Parse(summary.AsSpan(0, summary.IndexOf(' ', StringComparison.Ordinal)), CultureInfo.InvariantCulture);

    private async Task SignalWhenRecoverableAsync(Darq.Darq darq, long address, int window)
    {
        try
        {
            await darq.WaitForRecoverableAsync(address);
            _windowDone.GetOrAdd(window, _ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();
        }
        catch (Exception e) when (e is DseRolledBackException or ObjectDisposedException or OperationCanceledException)
        {
            // Rolled back (the replay steps the window again and signals it then), or the DARQ closed (a restart).
        }
    }

    /// <summary>Opens (or reopens) one stage's DARQ on its files in the run's folder.</summary>
    private Task<Darq.Darq> OpenAsync(string name, long id)
    {
        bool general = _coordinator is not null;
        return Darq.Darq.OpenAsync(new DarqOptions
        {
            Name = name,
            LogDevice = DseDevices.CreateLocalFile(Path.Combine(_directory, name + ".log")),
            CommitDevice = DseDevices.CreateLocalFile(Path.Combine(_directory, name + ".commit")),
            Destinations = _registry,
            Speculation = _options.Speculation,
            CommitInterval = general ? Timeout.InfiniteTimeSpan : _options.CommitInterval,
            Dse = general ? new DseOptions { ObjectId = id, GroupCommitPeriod = _options.CommitInterval } : null,
            Coordinator = _coordinator,
            DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(1),
            DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(20),
        });
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var runner in _runners.Values)
        {
            await runner.StopAsync();
        }

        foreach (var darq in _darqs.Values)
        {
            await darq.DisposeAsync();
        }

        if (_coordinator is not null)
        {
            await _coordinator.DisposeAsync();
        }

        if (_ownsDirectory)
        {
            try
            {
                Directory.Delete(_directory, recursive: true);
            }
            catch (IOException)
            {
                // Left behind in the temporary folder.
            }
        }
    }
}
