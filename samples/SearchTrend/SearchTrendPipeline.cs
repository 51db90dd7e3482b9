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

    // Each open DARQ's log and commit device, wrapped so that a chaos crash can cut them (nothing written after reaches the files).
    private readonly Dictionary<string, (FaultInjectingDevice Log, FaultInjectingDevice Commit)> _devices = new(StringComparer.Ordinal);
    private readonly AlertStage _alert;
    private readonly ConcurrentDictionary<int, TaskCompletionSource> _windowDone = new();
    private long _nextSequence;

    // Search events of the current window the filter appended (not duplicates), resends included.
    private int _appended;

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

    /// <summary>The chaos actions taken, and the source's resends after a rollback, in order.</summary>
    public List<string> Events { get; } = [];

    /// <summary>Search events the source sent again because a crash lost them or a rollback voided them.</summary>
    public int Resent { get; private set; }

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
            long first = _nextSequence;
            _nextSequence += lines.Count;
            _appended = 0;
            int killAt = _options.Chaos && window == windows.Count / 3 ? lines.Count / 2 : -1;
            int crashAt = _options.Chaos && window == windows.Count / 2 ? lines.Count / 2 : -1;
            var (last, start) = await SendAsync(window, lines, first, killAt, crashAt, cancellationToken);
            if (_options.Chaos && window == 2 * windows.Count / 3)
            {
                Events.Add($"window {window}, all of it sent: restarted the alert DARQ from its files");
                await RestartAsync("alert");
            }

            try
            {
                await WaitForWindowAsync(window, done.Task, lines, first, last, cancellationToken).WaitAsync(WindowTimeout, cancellationToken);
            }
            catch (TimeoutException e)
            {
                var faults = _runners.Values.Where(r => r.Fault is not null).Select(r => $"{r.Name}: {r.Fault!.Message}").ToList();
                throw new InvalidOperationException(
                    $"Window {window} did not reach the alert stage within {WindowTimeout.TotalSeconds} s" +
                    (faults.Count > 0 ? $"; failed processor loops: {string.Join("; ", faults)}" : "; no processor loop failed") + ".", e);
            }

            Resent += _appended - lines.Count;
            if (window > 0)
            {
                latencies.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
            }
        }

        return [.. latencies];
    }

    /// <summary>
    /// Enqueues a window's search events at the filter, under sequence numbers <paramref name="first"/> on, and returns
    /// the last one's address and the time it was sent. The filter takes each producer's numbers only without gaps
    /// (<see cref="DarqOptions.ContiguousProducerSequences"/>): when a rollback voided events already sent, the next one is
    /// refused with the number expected, and the source sends again from there (everything before the window is
    /// recoverable already, so that number is in this window). Numbers the filter still holds are acknowledged as
    /// duplicates.
    /// </summary>
    private async Task<(long Last, long Start)> SendAsync(int window, List<string> lines, long first, int killAt, int crashAt,
        CancellationToken cancellationToken)
    {
        long last = -1;
        long start = 0;
        for (int i = 0; i < lines.Count; i++)
        {
            if (i == killAt)
            {
                Events.Add($"window {window}, half of it sent: killed the count stage's processor");
                _runners["count"].KillProcessor();
                killAt = -1;
            }

            if (i == crashAt)
            {
                Events.Add($"window {window}, half of it sent: crashed the filter DARQ (what it had not committed is lost) and reopened it from its files");
                await CrashAsync("filter");
                crashAt = -1;
            }

            start = Stopwatch.GetTimestamp();
            try
            {
                var result = await _darqs["filter"].EnqueueAsync(SourceProducer, first + i, Encoding.UTF8.GetBytes(lines[i]), cancellationToken);
                last = result.IsDuplicate ? result.DurableAt - 1 : result.Lsn;
                _appended += result.IsDuplicate ? 0 : 1;
            }
            catch (DarqSequenceGapException gap) when (gap.ExpectedSequenceNumber >= first && gap.ExpectedSequenceNumber < first + i)
            {
                int from = (int)(gap.ExpectedSequenceNumber - first);
                Events.Add($"window {window}: the filter lost events {from} to {i - 1} of it (sequence gap); sending again from {from}");
                i = from - 1;
            }
        }

        return (last, start);
    }

    /// <summary>
    /// Waits until the window's summary is recoverable at the alert stage. Under general speculation a rollback may void
    /// the window's last events at the filter after they were sent: the source watches their barrier meanwhile, and sends
    /// the window again (deduplicated) if they were rolled back.
    /// </summary>
    private async Task WaitForWindowAsync(int window, Task done, List<string> lines, long first, long last, CancellationToken cancellationToken)
    {
        while (_coordinator is not null && !done.IsCompleted)
        {
            var barrier = _darqs["filter"].WaitForRecoverableAsync(last, cancellationToken).AsTask();
            await Task.WhenAny(done, barrier);
            try
            {
                await barrier;
                break;
            }
            catch (DseRolledBackException)
            {
                Events.Add($"window {window}: a rollback voided its last events after they were sent; sending the window again");
                (last, _) = await SendAsync(window, lines, first, -1, -1, cancellationToken);
            }
        }

        await done;
    }

    /// <summary>
    /// A crash of one DARQ's process, then a restart on its files. Nothing may be acknowledged after a crash: the
    /// processor stops, under general speculation the DARQ's StateObject stops (so the coordinator never hears of a
    /// version persisted after this point), then the commit device fails every later write (so no commit after this point
    /// succeeds) and only then the log device silently loses every later write (the other order would let a commit record
    /// land for log pages the cut lost). What the DARQ had not committed (or, under
    /// general speculation, not persisted) is lost; it is then closed and opened again from what its files hold.
    /// </summary>
    private async Task CrashAsync(string name)
    {
        var runner = _runners[name];
        var darq = _darqs[name];
        await runner.StopAsync();
        if (darq.DseStateObject is { } stateObject)
        {
            await stateObject.DisposeAsync();
        }

        var (log, commit) = _devices[name];
        commit.FailPermanently();
        log.CutNow();
        await ReopenAsync(name);
    }

    /// <summary>Closes one DARQ and opens it again on the same files, as after a restart of its process; its processor registers again.</summary>
    private async Task RestartAsync(string name)
    {
        await _runners[name].StopAsync();
        await ReopenAsync(name);
    }

    /// <summary>Closes one DARQ whose processor is stopped, opens it again on the same files and starts a processor on it.</summary>
    private async Task ReopenAsync(string name)
    {
        var runner = _runners[name];
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
        var devices = (
            new FaultInjectingDevice(DseDevices.CreateLocalFile(Path.Combine(_directory, name + ".log"))),
            new FaultInjectingDevice(DseDevices.CreateLocalFile(Path.Combine(_directory, name + ".commit"))));
        _devices[name] = devices;
        return Darq.Darq.OpenAsync(new DarqOptions
        {
            Name = name,
            LogDevice = devices.Item1,
            CommitDevice = devices.Item2,
            Destinations = _registry,
            Speculation = _options.Speculation,
            CommitInterval = general ? Timeout.InfiniteTimeSpan : _options.CommitInterval,
            Dse = general ? new DseOptions { ObjectId = id, GroupCommitPeriod = _options.CommitInterval } : null,
            Coordinator = _coordinator,
            ContiguousProducerSequences = true,
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
