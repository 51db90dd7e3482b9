using System.Globalization;
using System.Text;

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
/// </remarks>
internal sealed class DarqSearchTrendPipeline
{
    public const int WindowSize = 100;
    public const int Threshold = 15;
    private const long SourceProducer = 1;
    private const int FeedBatch = 25;
    private static readonly TimeSpan CleanupTimeout = TimeSpan.FromSeconds(30);
    private static readonly string[] Terms = ["darq", "faster", "crest", "the", "a", "azure", "dotnet", "queue", "log", "step"];
    private static readonly int[] Weights = [25, 15, 12, 12, 8, 8, 6, 6, 4, 4];

    private readonly DarqDestinationRegistry _registry = new();
    private readonly Dictionary<string, Stage> _stages = new(StringComparer.Ordinal);
    private readonly Progress _progress = new();
    private readonly List<string> _input;
    private readonly int _windows;

    public DarqSearchTrendPipeline(int seed, int events)
    {
        _windows = events / WindowSize;
        _input = Input(seed, events);
        foreach (string name in (string[])["filter", "count", "alert"])
        {
            _stages[name] = new Stage(name);
        }
    }

    /// <summary>The chaos actions taken, in order (for failure messages).</summary>
    public List<string> Actions { get; } = [];

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
        foreach (var stage in _stages.Values)
        {
            await OpenAsync(stage);
        }

        try
        {
            var feeding = FeedAsync(cancellationToken);
            var chaos = ChaosAsync(new Random(seed), chaosActions, cancellationToken);
            await Task.WhenAll(feeding, chaos);

            // Chaos is over: wait for the current alert processor to hold every window.
            var alert = _stages["alert"];
            await _progress.WaitUntilAsync(() => alert.Loop!.Windows >= _windows, cancellationToken);
        }
        finally
        {
            foreach (var stage in _stages.Values)
            {
                if (stage.Darq is not null)
                {
                    await stage.Darq.DisposeAsync();
                    await stage.Loop!.Completion.WaitAsync(CleanupTimeout, CancellationToken.None);
                }
            }
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
        $"{s.Name}: unconsumed {s.Darq?.UnconsumedCount}, pending out {s.Darq?.PendingOutCount}, steps {s.Loop?.Steps}, windows {s.Loop?.Windows}"));

    private static bool IsStopWord(string term) => term is "the" or "a";

    private static string Summary(long window, SortedDictionary<string, int> counts)
        => $"C {window} {string.Join(',', counts.Select(c => $"{c.Key}={c.Value}"))}";

    private async Task OpenAsync(Stage stage)
    {
        var generation = new Generation();
        var darq = await stage.Storage.OpenAsync(o =>
        {
            o.Name = stage.Name;
            // No background group commit: a receiving DARQ then commits at once for each delivery (rather than waiting
            // for the next group commit), and each processor commits whenever it has caught up with its stream.
            o.CommitInterval = Timeout.InfiniteTimeSpan;
            o.Destinations = new GuardedDestinations(this, generation);
            o.DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(1);
            o.DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(5);
        });
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

    private async Task ChaosAsync(Random random, int actions, CancellationToken cancellationToken)
    {
        // Progress points as a share of the steps a failure-free run takes (filter, count and alert steps).
        long expectedSteps = (2L * _input.Count) + (2L * _windows);
        var points = Enumerable.Range(0, actions).Select(_ => (long)(expectedSteps * (0.05 + (0.75 * random.NextDouble())))).Order().ToList();
        string[] names = ["filter", "count", "alert"];
        foreach (long point in points)
        {
            await _progress.WaitForAsync(point, cancellationToken);
            var stage = _stages[names[random.Next(names.Length)]];
            bool crash = random.Next(2) == 0;
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
                    stage.Storage.CrashNow();
                    abandoned.Abandon();
                    await stage.Darq!.DisposeAsync();
                    await abandoned.Completion.WaitAsync(cancellationToken);
                    await OpenAsync(stage);
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
    private sealed class Stage(string name)
    {
        public string Name { get; } = name;

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
            public async ValueTask DeliverAsync(DarqDelivery delivery, CancellationToken cancellationToken)
            {
                if (source.Crashed)
                {
                    throw new IOException($"{delivery.Source} crashed: its OUT entries may not be durable.");
                }

                var target = pipeline._stages[name].Generation!;
                var destination = pipeline._registry.Resolve(name) ?? throw new IOException($"{name} is gone.");
                await destination.DeliverAsync(delivery, cancellationToken);
                if (target.Crashed)
                {
                    throw new IOException($"{name} crashed during the delivery: the acknowledgement may be false.");
                }
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

        public void Abandon() => _abandon.Cancel();

        private async Task RunAsync()
        {
            var token = _abandon.Token;
            byte[]? state = null;
            long stateLsn = -1;
            try
            {
                await foreach (var message in _processor.ReadAllAsync(token))
                {
                    if (message.Kind == DarqMessageKind.Self)
                    {
                        // Replay brings the latest state (the only unconsumed SELF message) before any IN message.
                        state = message.Payload.ToArray();
                        stateLsn = message.Lsn;
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

                    var result = await _processor.StepAsync(step, token);
                    if (next is not null)
                    {
                        (state, stateLsn) = (next, result.SelfLsns[0]);
                    }

                    Interlocked.Increment(ref _steps);
                    _pipeline._progress.Increment();
                    if (!_processor.Messages.TryPeek(out _))
                    {
                        // Caught up: commit, so that the steps so far become durable and their OUT messages deliverable.
                        await _darq.CommitAsync(token);
                    }
                }
            }
            catch (Exception e) when (e is OperationCanceledException or DarqStaleIncarnationException or ObjectDisposedException
                                      || _abandon.IsCancellationRequested)
            {
                // Abandoned, superseded or crashed (a crash abandons the loop before closing the DARQ): its work is over.
            }
        }

        /// <summary>The stage's logic: adds OUT messages to the step and returns the new state (null: stateless).</summary>
        private byte[]? Apply(byte[]? state, string input, DarqStep step)
        {
            string[] parts = input.Split(' ', 2);
            switch (_stage)
            {
                case "filter":
                    if (parts[0] == "W" || !IsStopWord(parts[1].Split(' ')[0]))
                    {
                        step.AddOut("count", Encoding.UTF8.GetBytes(input));
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
                        step.AddOut("alert", Encoding.UTF8.GetBytes(Summary(long.Parse(parts[1], CultureInfo.InvariantCulture), counts)));
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
