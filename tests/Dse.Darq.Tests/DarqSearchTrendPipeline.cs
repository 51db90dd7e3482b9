using System.Diagnostics.Metrics;
using System.Globalization;
using System.Text;
using Dse.Testing;
using Microsoft.Extensions.Logging;

namespace Dse.Darq.Tests;

/// <summary>
/// A small version of the DARQ paper's search-trend example: three DARQs, each with a co-located processor, connected
/// by OUT delivery through a <see cref="DarqDestinationRegistry"/>. <c>filter</c> drops stop-word search events and
/// forwards the rest and the source's watermarks to <c>count</c>; <c>count</c> counts per (window, term) in a SELF state
/// and, on the watermark that closes a window, sends the window's counts to <c>alert</c>; <c>alert</c> keeps every
/// window's counts and an alert per count above <see cref="Threshold"/> in its SELF state. Every processor step
/// consumes its input together with the previous SELF state, so a restarted processor rebuilds its state from replay.
/// </summary>
/// <remarks>
/// <para>With chaos on, a seeded driver kills processors (abandon without any shutdown, register a new one on the same
/// DARQ) and crashes whole DARQs (a crash cut of both devices, then a new instance on the same storage) at seeded
/// points of progress, while a deduplicated source feeds the input and resends whatever a crash may have lost.</para>
/// <para>A crash cut acknowledges the writes it drops, so a crashed instance's "commits" can look successful. A real
/// crash acknowledges nothing: to stay faithful, the harness marks an instance crashed before cutting it, and a delivery
/// or a source batch that involved a crashed instance counts as not acknowledged (the sender retries, and the DARQ's
/// deduplication absorbs what did reach storage). A crashed source's delivery loop sends nothing more.</para>
/// <para>In general speculation (<c>general: true</c>) every DARQ is a StateObject of one embedded
/// <see cref="ClusterCoordinator"/> and OUT messages leave before they are committed. A crash then cuts the log device
/// and fails the commit device permanently, so that no commit (and no version persist) is acknowledged after it, as in a
/// real crash; the reopened DARQ reconnects to the coordinator, which rolls back every dependent. A rollback of a live
/// DARQ supersedes its processor, which registers again and replays. The source runs a window ahead of the filter's
/// barrier (<see cref="Darq.WaitForRecoverableAsync"/>) and, after a failure, resends from the first input it has not
/// seen recoverable under a new producer id: deduplication keeps one sequence number per producer, so resending under the
/// same id would drop inputs voided by a rollback once a later one was accepted. The filter therefore drops inputs by
/// their index (it keeps the next expected index in its state). The final alerts are read only through the barrier.</para>
/// </remarks>
internal sealed class DarqSearchTrendPipeline
{
    public const int WindowSize = 100;
    public const int Threshold = 15;
    private const long SourceProducer = 1;
    private const int FeedBatch = 25;
    private const int FeedWindow = 200;
    private static readonly TimeSpan GroupCommitPeriod = TimeSpan.FromMilliseconds(10);
    private static int s_instances;
    private static readonly TimeSpan CleanupTimeout = TimeSpan.FromSeconds(30);
    private static readonly string[] Terms = ["darq", "faster", "crest", "the", "a", "azure", "dotnet", "queue", "log", "step"];
    private static readonly int[] Weights = [25, 15, 12, 12, 8, 8, 6, 6, 4, 4];

    private readonly DarqDestinationRegistry _registry = new();
    private readonly Dictionary<string, Stage> _stages = new(StringComparer.Ordinal);
    private readonly Progress _progress = new();
    private readonly Dictionary<string, Stage> _stagesByDarqName = new(StringComparer.Ordinal);
    private readonly List<string> _input;
    private readonly int _windows;
    private readonly bool _general;

    /// <summary>
    /// Each DARQ's <see cref="DarqOptions.MaxBufferedInBytes"/> when not the default (a tiny one spills most IN messages);
    /// with it, <see cref="DarqOptions.MaxBufferedOutBytes"/> is 0, so every OUT message is read back from the log when
    /// sent, however quickly delivery keeps up.
    /// </summary>
    private readonly long? _maxBufferedBytes;
    private readonly ClusterCoordinator? _coordinator;

    /// <summary>The warnings and errors of the DARQs and their StateObjects (general speculation), for a failure message.</summary>
    private readonly LogCapture _log = new(LogLevel.Warning);
    private long _rollbacks;
    private long _fedFromLog;
    private long _outReadFromLog;
    private long _dependentRollbacks;

    /// <summary>A pipeline over seeded input; <paramref name="general"/> runs it in general speculation under one coordinator.</summary>
    public DarqSearchTrendPipeline(int seed, int events, bool general = false, long? maxBufferedBytes = null)
    {
        _maxBufferedBytes = maxBufferedBytes;
        _windows = events / WindowSize;
        _input = Input(seed, events);
        _general = general;

        // General: DARQ names unique to this pipeline, so that the rollback counter sees only its own DARQs.
        string prefix = general ? $"spec{Interlocked.Increment(ref s_instances)}-" : "";
        _coordinator = general ? new ClusterCoordinator() : null;
        long id = 1;
        foreach (string name in (string[])["filter", "count", "alert"])
        {
            var stage = new Stage(name, prefix + name, id++);
            _stages[name] = stage;
            _stagesByDarqName[stage.DarqName] = stage;
        }
    }

    /// <summary>The chaos actions taken, in order (for failure messages).</summary>
    public List<string> Actions { get; } = [];

    /// <summary>General speculation: restores that voided part of a DARQ's log (the <c>dse.darq.rollbacks</c> counter).</summary>
    public long Rollbacks => Interlocked.Read(ref _rollbacks);

    /// <summary>Spilled IN messages this pipeline's DARQs read back from their logs (counted with a non-default IN budget or general speculation).</summary>
    public long FedFromLog => Interlocked.Read(ref _fedFromLog);

    /// <summary>Spilled OUT payloads this pipeline's DARQs read back from their logs to send them.</summary>
    public long OutReadFromLog => Interlocked.Read(ref _outReadFromLog);

    /// <summary>General speculation: rollbacks of a DARQ other than during its own reopen after a crash (cascading ones).</summary>
    public long DependentRollbacks => Interlocked.Read(ref _dependentRollbacks);

    /// <summary>The source's input: "E term timestamp" events, one per time unit, and "W window" after each window.</summary>
    public static List<string> Input(int seed, int events)
    {
        var random = new Random(seed);
        int total = Weights.Sum();
        var input = new List<string>(events + (events / WindowSize));
        for (int time = 0; time < events; time++)
        {
            int pick = random.Next(total);
            int term = 0;
            while (pick >= Weights[term])
            {
                pick -= Weights[term++];
            }

            input.Add($"E {Terms[term]} {time}");
            if ((time + 1) % WindowSize == 0)
            {
                input.Add($"W {time / WindowSize}");
            }
        }

        return input;
    }

    /// <summary>What the alert stage must end with, computed directly from the input: window summaries, then alerts.</summary>
    public static (List<string> Windows, List<string> Alerts) Expected(IReadOnlyList<string> input)
    {
        var alert = new AlertState();
        var counts = new SortedDictionary<string, int>(StringComparer.Ordinal);
        foreach (string line in input)
        {
            string[] parts = line.Split(' ');
            if (parts[0] == "E" && !IsStopWord(parts[1]))
            {
                counts[parts[1]] = counts.GetValueOrDefault(parts[1]) + 1;
            }
            else if (parts[0] == "W")
            {
                alert.Apply(Summary(long.Parse(parts[1], CultureInfo.InvariantCulture), counts));
                counts.Clear();
            }
        }

        return (alert.Windows, alert.Alerts);
    }

    /// <summary>
    /// Runs the pipeline over the input with <paramref name="chaosActions"/> seeded kills and crashes, until the alert
    /// stage has every window; closes everything and returns the alert stage's state as recovered from its storage.
    /// </summary>
    public async Task<(List<string> Windows, List<string> Alerts)> RunAsync(int seed, int chaosActions, CancellationToken cancellationToken)
    {
        using var listener = _general || _maxBufferedBytes is not null ? ListenToDarqs() : null;
        (List<string> Windows, List<string> Alerts) recoverable = default;
        try
        {
            foreach (var stage in _stages.Values)
            {
                await OpenAsync(stage);
            }

            var feeding = _general ? FeedGeneralAsync(cancellationToken) : FeedAsync(cancellationToken);
            var chaos = ChaosAsync(new Random(seed), chaosActions, cancellationToken);
            await Task.WhenAll(feeding, chaos);

            // Chaos is over: wait for the current alert processor to hold every window.
            var alert = _stages["alert"];
            if (_general)
            {
                recoverable = await ReadRecoverableAlertsAsync(cancellationToken);
            }
            else
            {
                await _progress.WaitUntilAsync(() => alert.Loop!.Windows >= _windows, cancellationToken);
            }
        }
        finally
        {
            foreach (var stage in _stages.Values)
            {
                if (stage.Darq is not null)
                {
                    stage.Loop!.Abandon();
                    await stage.Darq.DisposeAsync().AsTask().WaitAsync(CleanupTimeout, CancellationToken.None);
                    await stage.Loop!.Completion.WaitAsync(CleanupTimeout, CancellationToken.None);
                }
            }

            if (_coordinator is not null)
            {
                await _coordinator.DisposeAsync().AsTask().WaitAsync(CleanupTimeout, CancellationToken.None);
            }
        }

        if (_general)
        {
            return recoverable;
        }

        // The count stage ends with no open window and nothing unconsumed but its state.
        await using (var count = await _stages["count"].Storage.OpenAsync(DarqDeliveryTests.Named("count")))
        {
            var replay = (await count.RegisterProcessorAsync()).Drain();
            Assert.True(replay.Count == 1 && replay[0].Kind == DarqMessageKind.Self && replay[0].Payload.Length == 0,
                $"the count stage ends with {replay.Count} unconsumed messages ({string.Join(" | ", replay.Select(m => $"{m.Kind} {m.Text()}"))})");
        }

        await using var recovered = await _stages["alert"].Storage.OpenAsync(DarqDeliveryTests.Named("alert"));
        var messages = (await recovered.RegisterProcessorAsync()).Drain();
        Assert.True(messages.Count == 1 && messages[0].Kind == DarqMessageKind.Self, $"the alert stage ends with {messages.Count} unconsumed messages");
        var state = AlertState.Decode(messages[0].Payload.Span);
        return (state.Windows, state.Alerts);
    }

    /// <summary>What the stages hold, for a failure message.</summary>
    public string Describe() => string.Join("; ", _stages.Values.Select(s =>
        $"{s.Name}: unconsumed {s.Darq?.UnconsumedCount}, pending out {s.Darq?.PendingOutCount}, steps {s.Loop?.Steps}, windows {s.Loop?.Windows}"
        + (s.Darq?.DseStateObject is { } dse ? $", world-line {dse.WorldLine}, version {dse.CurrentVersion}, committed {dse.CommittedVersion}" : "")))
        + (_general ? $"; recent log: {string.Join(" | ", _log.Entries.TakeLast(30))}" : "");

    private static bool IsStopWord(string term) => term is "the" or "a";

    private static string Summary(long window, SortedDictionary<string, int> counts)
        => $"C {window} {string.Join(',', counts.Select(c => $"{c.Key}={c.Value}"))}";

    private async Task OpenAsync(Stage stage)
    {
        var generation = new Generation();
        var darq = await stage.Storage.OpenAsync(o =>
        {
            o.Name = stage.DarqName;
            // No background group commit: a receiving DARQ then commits at once for each delivery (rather than waiting
            // for the next group commit), and each processor commits whenever it has caught up with its stream.
            o.CommitInterval = Timeout.InfiniteTimeSpan;
            o.Destinations = new GuardedDestinations(this, generation);
            o.DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(1);
            o.DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(5);
            if (_maxBufferedBytes is { } budget)
            {
                o.MaxBufferedInBytes = budget;
                o.MaxBufferedOutBytes = 0;
            }

            if (_general)
            {
                o.Speculation = DarqSpeculationMode.General;
                o.Dse = new DseOptions
                {
                    ObjectId = stage.Id,
                    RunBackgroundTasks = true,
                    GroupCommitPeriod = GroupCommitPeriod,
                    HeartbeatPeriod = TimeSpan.FromMinutes(10),
                };
                o.Coordinator = _coordinator;

                // The source uses a new producer id per attempt (see the remarks).
                o.MaxProducers = 1024;
                o.Dse.LoggerFactory = _log;
            }
        }, _general ? _log : null);
        stage.Darq = darq;
        stage.Generation = generation;
        _registry.Add(darq);
        stage.Loop = new ProcessorLoop(this, stage.Name, darq, await darq.RegisterProcessorAsync());
    }

    /// <summary>The deduplicated source: batches of input, each resent whole if the filter DARQ crashed meanwhile.</summary>
    private async Task FeedAsync(CancellationToken cancellationToken)
    {
        var filter = _stages["filter"];
        for (int first = 0; first < _input.Count; first += FeedBatch)
        {
            while (true)
            {
                cancellationToken.ThrowIfCancellationRequested();
                await filter.Swap.WaitAsync(cancellationToken);
                var (darq, generation) = (filter.Darq!, filter.Generation!);
                filter.Swap.Release();
                try
                {
                    for (int i = first; i < first + FeedBatch && i < _input.Count; i++)
                    {
                        await darq.EnqueueAsync(SourceProducer, i, Encoding.UTF8.GetBytes(_input[i]), cancellationToken);
                    }

                    await darq.CommitAsync(cancellationToken);

                    // Checked after the commit returned: not crashed then means the commit came before the cut.
                    if (!generation.Crashed)
                    {
                        break;
                    }
                }
                catch (Exception) when (generation.Crashed)
                {
                    // Crashed and closed under us (whatever the closed log threw): resend the batch to the new instance.
                }
            }
        }
    }

    /// <summary>
    /// General speculation's source: enqueues from the first input not yet seen recoverable, at most
    /// <see cref="FeedWindow"/> ahead of the barrier (so the stages hold speculative work when a crash comes); any failure
    /// (a crash, a rollback) starts a new attempt under a new producer id.
    /// </summary>
    private async Task FeedGeneralAsync(CancellationToken cancellationToken)
    {
        var filter = _stages["filter"];
        var sent = new Queue<(int Index, long Lsn)>(FeedWindow);
        int next = 0;
        long producer = SourceProducer;
        while (next < _input.Count)
        {
            cancellationToken.ThrowIfCancellationRequested();
            await filter.Swap.WaitAsync(cancellationToken);
            var darq = filter.Darq!;
            filter.Swap.Release();
            long attempt = producer++;
            sent.Clear();
            try
            {
                for (int i = next; i < _input.Count || sent.Count > 0;)
                {
                    if (i < _input.Count && sent.Count < FeedWindow)
                    {
                        var result = await darq.EnqueueAsync(attempt, i, Encoding.UTF8.GetBytes($"{i} {_input[i]}"), cancellationToken);
                        sent.Enqueue((i++, result.Lsn));
                        continue;
                    }

                    // In order: an input counts as received only with every earlier one of the attempt.
                    var (index, lsn) = sent.Dequeue();
                    await darq.WaitForRecoverableAsync(lsn, cancellationToken);
                    next = index + 1;
                }
            }
            catch (Exception e) when (!cancellationToken.IsCancellationRequested)
            {
                // Rolled back, crashed or closed under us: resend from the first input not seen recoverable.
                lock (Actions)
                {
                    Actions.Add($"source resends from {next} ({e.GetType().Name})");
                }
            }
        }
    }

    /// <summary>General speculation: the alert stage's state with every window, once the barrier says it is recoverable.</summary>
    private async Task<(List<string> Windows, List<string> Alerts)> ReadRecoverableAlertsAsync(CancellationToken cancellationToken)
    {
        var alert = _stages["alert"];
        while (true)
        {
            await _progress.WaitUntilAsync(() => alert.Loop!.Windows >= _windows, cancellationToken);
            var (darq, state) = (alert.Darq!, alert.Loop!.State);
            if (state is not null && AlertState.Decode(state.Payload).Windows.Count >= _windows)
            {
                long seen = _progress.Count;
                try
                {
                    await darq.WaitForRecoverableAsync(state.Lsn, cancellationToken);
                    var recovered = AlertState.Decode(state.Payload);
                    return (recovered.Windows, recovered.Alerts);
                }
                catch (Exception e) when (e is DseRolledBackException or DseFaultedException or ObjectDisposedException)
                {
                    lock (Actions)
                    {
                        Actions.Add($"final alert state not recoverable ({e.GetType().Name}); waiting again");
                    }
                }

                // Rolled back: wait for the alert stage to make progress again.
                await _progress.WaitForAsync(seen + 1, cancellationToken);
            }
            else
            {
                await _progress.WaitForAsync(_progress.Count + 1, cancellationToken);
            }
        }
    }

    /// <summary>
    /// Counts this pipeline's DARQ rollbacks (a rollback outside the DARQ's own reopen is a dependent's) and the spilled
    /// IN messages its DARQs read back from their logs.
    /// </summary>
    private MeterListener ListenToDarqs()
    {
        var listener = new MeterListener
        {
            InstrumentPublished = (instrument, l) =>
            {
                if (instrument.Meter.Name == DarqInstrumentation.MeterName && instrument.Name is "dse.darq.rollbacks" or "dse.darq.in.fed_from_log" or "dse.darq.out.read_from_log")
                {
                    l.EnableMeasurementEvents(instrument);
                }
            },
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            foreach (var tag in tags)
            {
                if (tag.Key == "darq" && tag.Value is string fed && instrument.Name == "dse.darq.in.fed_from_log" && _stagesByDarqName.ContainsKey(fed))
                {
                    Interlocked.Add(ref _fedFromLog, value);
                }
                else if (tag.Key == "darq" && tag.Value is string sender && instrument.Name == "dse.darq.out.read_from_log" && _stagesByDarqName.ContainsKey(sender))
                {
                    Interlocked.Add(ref _outReadFromLog, value);
                }
                else if (tag.Key == "darq" && instrument.Name == "dse.darq.rollbacks" && tag.Value is string name && _stagesByDarqName.TryGetValue(name, out var stage))
                {
                    bool dependent = !stage.Reopening;
                    Interlocked.Add(ref _rollbacks, value);
                    if (dependent)
                    {
                        Interlocked.Add(ref _dependentRollbacks, value);
                    }

                    lock (Actions)
                    {
                        Actions.Add($"rollback of {stage.Name}{(dependent ? "" : " (its own reopen)")}");
                    }
                }
            }
        });
        listener.Start();
        return listener;
    }

    private async Task ChaosAsync(Random random, int actions, CancellationToken cancellationToken)
    {
        // Progress points as a share of the steps a failure-free run takes (filter, count and alert steps).
        long expectedSteps = (2L * _input.Count) + (2L * _windows);
        var points = Enumerable.Range(0, actions).Select(_ => (long)(expectedSteps * (0.05 + (0.75 * random.NextDouble())))).Order().ToList();
        string[] names = ["filter", "count", "alert"];
        for (int action = 0; action < points.Count; action++)
        {
            await _progress.WaitForAsync(points[action], cancellationToken);
            var stage = _stages[names[random.Next(names.Length)]];
            bool crash = random.Next(2) == 0;
            if (_general && action == 0)
            {
                // General: the first action crashes the filter while the count stage consumes its speculative output,
                // so that the rollback cascades.
                (stage, crash) = (_stages["filter"], true);
                var count = _stages["count"];
                long from = count.Loop!.Steps;
                await _progress.WaitUntilAsync(() => count.Loop!.Steps >= from + 20, cancellationToken);
            }

            lock (Actions)
            {
                Actions.Add($"{(crash ? "crash" : "kill")} {stage.Name} at {_progress.Count} steps");
            }

            await stage.Swap.WaitAsync(cancellationToken);
            try
            {
                var abandoned = stage.Loop!;
                if (crash)
                {
                    // Marked before the cut: anything acknowledged after this point may be lost and must be resent.
                    stage.Generation!.Crashed = true;
                    if (_general)
                    {
                        abandoned.Abandon();

                        // Nothing is acknowledged after a real crash: the StateObject stops first (on healthy devices, so
                        // a restore it is applying completes), then no commit (no version persist still in flight)
                        // succeeds and the log loses its tail, in that order, so the coordinator never hears of a version
                        // the cut lost and no commit record points at lost pages.
                        await stage.Darq!.DseStateObject!.DisposeAsync().AsTask().WaitAsync(cancellationToken);
                        stage.Storage.CommitFaults!.FailPermanently();
                        stage.Storage.LogFaults!.CutNow();
                    }
                    else
                    {
                        stage.Storage.CrashNow();
                        abandoned.Abandon();
                    }

                    await stage.Darq!.DisposeAsync().AsTask().WaitAsync(cancellationToken);
                    await abandoned.Completion.WaitAsync(cancellationToken);
                    stage.Reopening = true;
                    try
                    {
                        await OpenAsync(stage).WaitAsync(cancellationToken);
                        lock (Actions)
                        {
                            Actions.Add($"{stage.Name} reopened");
                        }
                    }
                    finally
                    {
                        stage.Reopening = false;
                    }
                }
                else
                {
                    // The processor stops mid-stream (maybe mid-step); a new one registers on the same DARQ.
                    abandoned.Abandon();
                    stage.Loop = new ProcessorLoop(this, stage.Name, stage.Darq!, await stage.Darq!.RegisterProcessorAsync(cancellationToken));
                    await abandoned.Completion.WaitAsync(cancellationToken);
                }
            }
            finally
            {
                stage.Swap.Release();
            }
        }
    }

    /// <summary>One stage: its storage (which outlives instances) and its current DARQ instance and processor.</summary>
    private sealed class Stage(string name, string darqName, long id)
    {
        private volatile bool _reopening;

        public string Name { get; } = name;

        /// <summary>The DARQ's name (the stage name, prefixed in general speculation).</summary>
        public string DarqName { get; } = darqName;

        /// <summary>General speculation: the StateObject id.</summary>
        public long Id { get; } = id;

        /// <summary>Set while a crashed DARQ reopens (its own rollback is not a dependent's).</summary>
        public bool Reopening
        {
            get => _reopening;
            set => _reopening = value;
        }

        public DarqTestStorage Storage { get; } = new();

        /// <summary>Held while the stage's instance or processor is replaced.</summary>
        public SemaphoreSlim Swap { get; } = new(1, 1);

        public Darq? Darq { get; set; }

        public Generation? Generation { get; set; }

        public ProcessorLoop? Loop { get; set; }
    }

    /// <summary>One DARQ instance's life: crashed once the chaos driver marked it (before cutting its storage).</summary>
    private sealed class Generation
    {
        private volatile bool _crashed;

        public bool Crashed
        {
            get => _crashed;
            set => _crashed = value;
        }
    }

    /// <summary>
    /// The destinations one DARQ instance sends to: the registry, except that nothing leaves a crashed instance, and a
    /// delivery into an instance that crashed meanwhile is not acknowledged.
    /// </summary>
    private sealed class GuardedDestinations(DarqSearchTrendPipeline pipeline, Generation source) : IDarqDestinations
    {
        public IDarqDestination? Resolve(string name)
            => pipeline._registry.Resolve(name) is null ? null : new Guarded(pipeline, source, name);

        private sealed class Guarded(DarqSearchTrendPipeline pipeline, Generation source, string name) : IDarqDestination
        {
            /// <summary>As the registry's destination: a General DARQ receives speculatively, so OUT leaves before commit.</summary>
            public bool ReceivesSpeculatively => pipeline._registry.Resolve(name)?.ReceivesSpeculatively ?? false;

            public async ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken)
            {
                if (source.Crashed)
                {
                    throw new IOException($"{delivery.Source} crashed: its OUT entries may not be durable.");
                }

                var target = pipeline._stagesByDarqName[name].Generation!;
                var destination = pipeline._registry.Resolve(name) ?? throw new IOException($"{name} is gone.");
                await destination.DeliverAsync(delivery, cancellationToken);
                if (target.Crashed)
                {
                    throw new IOException($"{name} crashed during the delivery: the acknowledgement may be false.");
                }
            }

            /// <summary>
            /// General speculation: nothing leaves a crashed instance; the acknowledgement carries the destination's
            /// dependency, so the coordinator (not this guard) handles a destination that loses it.
            /// </summary>
            public async ValueTask<ReadOnlyMemory<byte>> DeliverSpeculativeAsync(DarqDelivery delivery, CancellationToken cancellationToken)
            {
                if (source.Crashed)
                {
                    throw new IOException($"{delivery.Source} crashed: its OUT entries may not be durable.");
                }

                var destination = pipeline._registry.Resolve(name) ?? throw new IOException($"{name} is gone.");
                return await destination.DeliverSpeculativeAsync(delivery, cancellationToken);
            }
        }
    }

    /// <summary>A processor's loop: steps every message with the stage's logic, the state in one SELF message.</summary>
    private sealed class ProcessorLoop
    {
        private readonly DarqSearchTrendPipeline _pipeline;
        private readonly string _stage;
        private readonly Darq _darq;
        private readonly DarqProcessor _processor;
        private readonly CancellationTokenSource _abandon = new();
        private StateView? _state;
        private int _windows;
        private long _steps;

        public ProcessorLoop(DarqSearchTrendPipeline pipeline, string stage, Darq darq, DarqProcessor processor)
        {
            _pipeline = pipeline;
            _stage = stage;
            _darq = darq;
            _processor = processor;
            Completion = Task.Run(RunAsync);
        }

        public Task Completion { get; }

        /// <summary>Windows in this loop's alert state (alert stage only).</summary>
        public int Windows => Volatile.Read(ref _windows);

        public long Steps => Interlocked.Read(ref _steps);

        /// <summary>The latest state and the LSN of its SELF message (null before the first).</summary>
        public StateView? State => Volatile.Read(ref _state);

        public void Abandon() => _abandon.Cancel();

        private async Task RunAsync()
        {
            var processor = _processor;
            while (true)
            {
                try
                {
                    await RunAsync(processor);
                    return;
                }
                catch (Exception e) when (_pipeline._general
                                          && (e is DarqStaleIncarnationException || e.InnerException is DarqStaleIncarnationException))
                {
                    // General speculation: a rollback superseded the processor. Register again: replay brings the
                    // restored state. Unless the chaos abandoned this loop after the inner loop let the exception
                    // through: then the processor that superseded it is the chaos's replacement, which carries on.
                    if (_abandon.IsCancellationRequested)
                    {
                        return;
                    }
                }

                try
                {
                    processor = await _darq.RegisterProcessorAsync(_abandon.Token);
                }
                catch (Exception e) when (e is OperationCanceledException or ObjectDisposedException || _abandon.IsCancellationRequested)
                {
                    return;
                }
            }
        }

        private async Task RunAsync(DarqProcessor processor)
        {
            var token = _abandon.Token;
            byte[]? state = null;
            long stateLsn = -1;
            try
            {
                await foreach (var message in processor.ReadAllAsync(token))
                {
                    if (message.Kind == DarqMessageKind.Self)
                    {
                        // Replay brings the latest state (the only unconsumed SELF message) before any IN message.
                        state = message.Payload.ToArray();
                        stateLsn = message.Lsn;
                        Volatile.Write(ref _state, new StateView(state, stateLsn));
                        if (_stage == "alert")
                        {
                            Volatile.Write(ref _windows, AlertState.Decode(state).Windows.Count);
                        }

                        // Counted as progress too: a restarted alert stage may have nothing left to step.
                        _pipeline._progress.Increment();
                        continue;
                    }

                    var step = new DarqStep().Consume(message);
                    if (stateLsn >= 0)
                    {
                        step.Consume(stateLsn);
                    }

                    byte[]? next = Apply(state, message.Text(), step);
                    if (next is not null)
                    {
                        step.AddSelf(next);
                    }

                    var result = await processor.StepAsync(step, token);
                    if (next is not null)
                    {
                        (state, stateLsn) = (next, result.SelfLsns[0]);
                        Volatile.Write(ref _state, new StateView(state, stateLsn));
                    }

                    Interlocked.Increment(ref _steps);
                    _pipeline._progress.Increment();
                    if (!_pipeline._general && !processor.Messages.TryPeek(out _))
                    {
                        // Caught up: commit, so that the steps so far become durable and their OUT messages deliverable.
                        await _darq.CommitAsync(token);
                    }
                }
            }
            catch (Exception e) when (_pipeline._general && !_abandon.IsCancellationRequested
                                      && (e is DarqStaleIncarnationException || e.InnerException is DarqStaleIncarnationException))
            {
                // General speculation: superseded by a rollback; the caller registers again.
                throw;
            }
            catch (Exception e) when (e is OperationCanceledException or DarqStaleIncarnationException or ObjectDisposedException
                                      || _abandon.IsCancellationRequested)
            {
                // Abandoned, superseded or crashed (a crash abandons the loop before closing the DARQ): its work is over.
            }
        }

        /// <summary>
        /// General speculation's filter: inputs come as "index line"; the state is the next expected index. Any other
        /// index is dropped (a duplicate, or one after a gap that a rollback left, which the source resends).
        /// </summary>
        private byte[] FilterIndexed(byte[]? state, string input, DarqStep step)
        {
            long expected = state is null ? 0 : long.Parse(Encoding.UTF8.GetString(state), CultureInfo.InvariantCulture);
            string[] parts = input.Split(' ', 3);
            if (long.Parse(parts[0], CultureInfo.InvariantCulture) != expected)
            {
                return state ?? "0"u8.ToArray();
            }

            if (parts[1] == "W" || !IsStopWord(parts[2].Split(' ')[0]))
            {
                step.AddOut(_pipeline._stages["count"].DarqName, Encoding.UTF8.GetBytes($"{parts[1]} {parts[2]}"));
            }

            return Encoding.UTF8.GetBytes((expected + 1).ToString(CultureInfo.InvariantCulture));
        }

        /// <summary>The stage's logic: adds OUT messages to the step and returns the new state (null: stateless).</summary>
        private byte[]? Apply(byte[]? state, string input, DarqStep step)
        {
            string[] parts = input.Split(' ', 2);
            switch (_stage)
            {
                case "filter":
                    if (_pipeline._general)
                    {
                        return FilterIndexed(state, input, step);
                    }

                    if (parts[0] == "W" || !IsStopWord(parts[1].Split(' ')[0]))
                    {
                        step.AddOut(_pipeline._stages["count"].DarqName, Encoding.UTF8.GetBytes(input));
                    }

                    return null;
                case "count":
                {
                    // State: the open window's counts, "term=n" lines (a window closes before the next one's events).
                    var counts = new SortedDictionary<string, int>(StringComparer.Ordinal);
                    foreach (string line in Encoding.UTF8.GetString(state ?? []).Split('\n', StringSplitOptions.RemoveEmptyEntries))
                    {
                        string[] pair = line.Split('=');
                        counts[pair[0]] = int.Parse(pair[1], CultureInfo.InvariantCulture);
                    }

                    if (parts[0] == "E")
                    {
                        string term = parts[1].Split(' ')[0];
                        counts[term] = counts.GetValueOrDefault(term) + 1;
                    }
                    else
                    {
                        step.AddOut(_pipeline._stages["alert"].DarqName, Encoding.UTF8.GetBytes(Summary(long.Parse(parts[1], CultureInfo.InvariantCulture), counts)));
                        counts.Clear();
                    }

                    return Encoding.UTF8.GetBytes(string.Join('\n', counts.Select(c => $"{c.Key}={c.Value}")));
                }

                default:
                {
                    var alert = state is null ? new AlertState() : AlertState.Decode(state);
                    alert.Apply(input);
                    Volatile.Write(ref _windows, alert.Windows.Count);
                    return alert.Encode();
                }
            }
        }
    }

    /// <summary>A processor's state and the LSN of the SELF message holding it.</summary>
    private sealed record StateView(byte[] Payload, long Lsn);

    /// <summary>The alert stage's state: every window summary received, in order, and the alerts raised from them.</summary>
    private sealed class AlertState
    {
        public List<string> Windows { get; } = [];

        public List<string> Alerts { get; } = [];

        public static AlertState Decode(ReadOnlySpan<byte> bytes)
        {
            var state = new AlertState();
            foreach (string line in Encoding.UTF8.GetString(bytes).Split('\n', StringSplitOptions.RemoveEmptyEntries))
            {
                (line[0] == 'C' ? state.Windows : state.Alerts).Add(line);
            }

            return state;
        }

        /// <summary>Takes one window summary "C window term=n,..." and raises "A window term n" per count above the threshold.</summary>
        public void Apply(string summary)
        {
            Windows.Add(summary);
            string[] parts = summary.Split(' ');
            foreach (string pair in parts[2].Split(',', StringSplitOptions.RemoveEmptyEntries))
            {
                string[] termCount = pair.Split('=');
                if (int.Parse(termCount[1], CultureInfo.InvariantCulture) > Threshold)
                {
                    Alerts.Add($"A {parts[1]} {termCount[0]} {termCount[1]}");
                }
            }
        }

        public byte[] Encode() => Encoding.UTF8.GetBytes(string.Join('\n', Windows.Concat(Alerts)));
    }

    /// <summary>Counts processor steps and replayed states (all stages, all incarnations) and wakes waiters for a count.</summary>
    private sealed class Progress
    {
        private readonly Lock _lock = new();
        private readonly List<(long Count, TaskCompletionSource Done)> _waiters = [];
        private long _count;

        public long Count => Interlocked.Read(ref _count);

        public void Increment()
        {
            lock (_lock)
            {
                _count++;
                for (int i = _waiters.Count - 1; i >= 0; i--)
                {
                    if (_waiters[i].Count <= _count)
                    {
                        _waiters[i].Done.TrySetResult();
                        _waiters.RemoveAt(i);
                    }
                }
            }
        }

        public Task WaitForAsync(long count, CancellationToken cancellationToken)
        {
            lock (_lock)
            {
                if (_count >= count)
                {
                    return Task.CompletedTask;
                }

                var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                _waiters.Add((count, done));
                return done.Task.WaitAsync(cancellationToken);
            }
        }

        /// <summary>Waits until <paramref name="condition"/> holds, checking it after every step.</summary>
        public async Task WaitUntilAsync(Func<bool> condition, CancellationToken cancellationToken)
        {
            while (true)
            {
                long next = Count + 1;
                if (condition())
                {
                    return;
                }

                await WaitForAsync(next, cancellationToken);
            }
        }
    }
}
