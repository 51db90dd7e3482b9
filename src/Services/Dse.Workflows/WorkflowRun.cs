using System.Diagnostics;
using System.Text.Json;

namespace Dse.Workflows;

/// <summary>
/// One run of one workflow instance in one generation of the engine: its history, and the loop that drives its code.
/// The loop runs the code on a <see cref="WorkflowSynchronizationContext"/> until it waits, then feeds it the next history
/// event; once the history is used up (the replay is over), it starts executors for the commands the code is waiting on
/// and waits for them to append their outcomes. So the code sees the same events in the same order on every replay.
/// </summary>
/// <remarks>
/// Fields marked "loop only" are touched by the loop alone (and by workflow code, which runs inside the loop). The history
/// and <see cref="_closed"/> are shared with executors and the engine, under <see cref="_lock"/>: an event is appended to
/// the log and to <see cref="_history"/> in one step, so the history's order is the log's order.
/// </remarks>
internal sealed class WorkflowRun
{
    private readonly WorkflowEngine _engine;
    private readonly WorkflowDefinition _definition;
    private readonly Lock _lock = new();

    // Guarded by _lock. Every event of the run, replayed or appended, in log order.
    private readonly List<HistoryEvent> _history;

    // Guarded by _lock. Set when the run ended (terminal event) or stopped: nothing more is appended.
    private bool _closed;

    // Set by anyone to wake the loop; the loop clears it before looking for work.
    private readonly SemaphoreSlim _wake = new(0, 1);

    private readonly WorkflowSynchronizationContext _sync;

    // Loop only: the command-intent events of the replayed history, by command number, and the change versions it took.
    private readonly Dictionary<int, HistoryEvent> _replayedCommands = [];
    private readonly Dictionary<string, int> _replayedMarkers = new(StringComparer.Ordinal);

    // Loop only: the commands the code issued that have no outcome yet, by number.
    private readonly SortedDictionary<int, WorkflowCommand> _pending = [];

    // Loop only: version markers to append, signals delivered but not yet taken, and code waiting for signals.
    private readonly List<(string ChangeId, int Version)> _markersToAppend = [];
    private readonly Dictionary<string, Queue<ReadOnlyMemory<byte>>> _signals = new(StringComparer.Ordinal);
    private readonly Dictionary<string, Queue<TaskCompletionSource<ReadOnlyMemory<byte>>>> _signalWaiters = new(StringComparer.Ordinal);

    private readonly CancellationTokenSource _cancelRequested = new();
    private readonly int _replayLength;

    // Commands issued and not finished; written by the loop, read by status queries.
    private int _pendingCount;

    // Loop only. The WorkflowStarted event is delivered at construction (it is the input).
    private int _delivered = 1;
    private int _nextSeq;
    private int _guids;
    private DateTimeOffset _now;
    private Task<byte[]>? _body;
    private WorkflowNonDeterminismException? _divergence;

    /// <summary>Creates a run over <paramref name="history"/> (at least its WorkflowStarted event).</summary>
    public WorkflowRun(WorkflowEngine engine, WorkflowDefinition definition, Generation generation, List<HistoryEvent> history)
    {
        Debug.Assert(history.Count > 0 && history[0].Kind == HistoryEventKind.WorkflowStarted, "A run starts with its WorkflowStarted event.");
        _engine = engine;
        _definition = definition;
        Generation = generation;
        _history = history;
        _replayLength = history.Count;
        Id = history[0].WorkflowId;
        RunNumber = history[0].Run;
        _now = history[0].Timestamp;
        Random = new Random(Seed(Id, RunNumber));
        Context = new WorkflowContext(this);
        _sync = new WorkflowSynchronizationContext(Wake);
        foreach (var e in history)
        {
            if (e.IsCommand)
            {
                _replayedCommands[e.Seq] = e;
            }
            else if (e.Kind == HistoryEventKind.VersionMarker && e.Name is not null)
            {
                _replayedMarkers[e.Name] = e.Seq;
            }
        }
    }

    /// <summary>The workflow id.</summary>
    public string Id { get; }

    /// <summary>The run number.</summary>
    public int RunNumber { get; }

    /// <summary>The workflow type.</summary>
    public string Type => _definition.Type;

    /// <summary>The engine generation the run belongs to: when it ends, the run stops and a new one replays.</summary>
    public Generation Generation { get; }

    /// <summary>The context handed to the workflow code.</summary>
    public WorkflowContext Context { get; }

    /// <summary>The workflow's replay-safe random numbers (seeded from the workflow id and run).</summary>
    public Random Random { get; }

    /// <summary>The workflow's clock: the timestamp of the last history event it was fed.</summary>
    public DateTimeOffset UtcNow => _now;

    /// <summary>Whether the code is re-running history it ran before.</summary>
    public bool IsReplaying => _delivered < _replayLength;

    /// <summary>Cancelled once a cancellation request is in the history the code has been fed.</summary>
    public CancellationToken CancellationToken => _cancelRequested.Token;

    /// <summary>The attempt options of compensations that name none.</summary>
    public StepOptions CompensationOptions => _engine.Options.DefaultCompensationOptions;

    /// <summary>The serializer options of the engine.</summary>
    public JsonSerializerOptions Serializer => _engine.Options.SerializerOptions;

    /// <summary>Events in the history so far.</summary>
    public int HistoryLength
    {
        get
        {
            lock (_lock)
            {
                return _history.Count;
            }
        }
    }

    /// <summary>Commands issued and not finished (read without the loop: a snapshot).</summary>
    public int PendingCommands => Volatile.Read(ref _pendingCount);

    /// <summary>
    /// Appends an event of this run (numbered here) to the log and to the history, unless the run is closed or the
    /// generation is over. Call inside an action of the engine's log.
    /// </summary>
    /// <returns>False if nothing was appended.</returns>
    public bool TryAppend(HistoryEventKind kind, int seq = 0, string? name = null, string? text = null, ReadOnlyMemory<byte> data = default, bool closes = false)
    {
        bool restored = false;
        bool appended = false;
        lock (_lock)
        {
            if (!_closed && _engine.MayAppend(Generation, out restored))
            {
                var e = new HistoryEvent(Id, RunNumber, _history.Count, kind, _engine.Options.TimeProvider.GetUtcNow(), seq, name, text, data);
                _engine.AppendToLog(e);
                _history.Add(e);
                _closed = closes;
                appended = true;
            }
        }

        if (appended)
        {
            Wake();
            return true;
        }

        if (restored)
        {
            // Outside the run's lock: the engine's lock comes first in the lock order.
            _engine.RequestReload("the log was restored");
        }

        return false;
    }

    /// <summary>Closes the run without appending (it stopped, or the engine drops it).</summary>
    public void Close()
    {
        lock (_lock)
        {
            _closed = true;
        }

        Wake();
    }

    /// <summary>Whether the run accepts appends.</summary>
    public bool IsClosed
    {
        get
        {
            lock (_lock)
            {
                return _closed;
            }
        }
    }

    /// <summary>Drives the workflow code until the run ends, stops, or its generation is over.</summary>
    public async Task RunAsync()
    {
        var token = Generation.Token;
        try
        {
            _sync.Post(_ => _body = _definition.RunAsync(Context, _history[0].Data, Serializer), null);
            while (!token.IsCancellationRequested)
            {
                _sync.RunQueued();
                if (_divergence is not null)
                {
                    _engine.StopRun(this, _divergence);
                    return;
                }

                if (_body is { IsCompleted: true })
                {
                    await FinishAsync(_body, token).ConfigureAwait(false);
                    return;
                }

                HistoryEvent? next = null;
                bool closed;
                lock (_lock)
                {
                    closed = _closed;
                    if (_delivered < _history.Count)
                    {
                        next = _history[_delivered++];
                    }
                }

                if (next is not null)
                {
                    Deliver(next);
                    continue;
                }

                if (closed)
                {
                    return;
                }

                await IssueAsync(token).ConfigureAwait(false);
                await _wake.WaitAsync(token).ConfigureAwait(false);
            }
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            // The generation is over; the next one replays this run from the log.
        }
        catch (Exception ex)
        {
            _engine.StopRun(this, ex);
        }
    }

    /// <summary>Wakes the loop.</summary>
    public void Wake()
    {
        try
        {
            _wake.Release();
        }
        catch (SemaphoreFullException)
        {
            // Already awake.
        }
    }

    // ---- Commands, called by workflow code on the loop ----

    /// <summary>Issues a command and returns what the code awaits.</summary>
    public Task<ReadOnlyMemory<byte>> Issue(WorkflowCommand command)
    {
        Debug.Assert(command.Seq == _nextSeq, "Commands are numbered in the order the code issues them.");
        _nextSeq++;
        if (_replayedCommands.TryGetValue(command.Seq, out var recorded)
            && (recorded.Kind != command.ScheduledKind || recorded.Name != command.Name || (command.Kind == CommandKind.Child && recorded.Text != command.ChildId)))
        {
            Diverge($"the workflow now issues {command} where its history has {Describe(recorded)} (history event {recorded.Index})");
            return new TaskCompletionSource<ReadOnlyMemory<byte>>().Task;
        }

        _pending[command.Seq] = command;
        Interlocked.Increment(ref _pendingCount);
        if (command.Kind == CommandKind.Timer)
        {
            // A cancelled workflow stops waiting for its timers; the timer's executor still records it firing.
            CancellationToken.Register(() => command.Completion.TrySetCanceled(CancellationToken));
        }

        return command.Completion.Task;
    }

    /// <summary>The next command number.</summary>
    public int NextSeq => _nextSeq;

    /// <summary>The version of <paramref name="changeId"/> this run takes (see <see cref="WorkflowContext.GetVersion"/>).</summary>
    public int GetVersion(string changeId, int minSupported, int maxSupported)
    {
        if (_replayedMarkers.TryGetValue(changeId, out int recorded) || TryFindPendingMarker(changeId, out recorded))
        {
            if (recorded < minSupported || recorded > maxSupported)
            {
                Diverge($"the history took version {recorded} of change '{changeId}', and this code supports {minSupported}..{maxSupported}");
            }

            return recorded;
        }

        if (IsReplaying)
        {
            // The run got past this point before the change existed: it keeps the old code path.
            if (WorkflowContext.DefaultVersion < minSupported)
            {
                Diverge($"the run started before change '{changeId}', and this code no longer supports that (minimum version {minSupported})");
            }

            return WorkflowContext.DefaultVersion;
        }

        _markersToAppend.Add((changeId, maxSupported));
        _replayedMarkers[changeId] = maxSupported;
        return maxSupported;
    }

    /// <summary>A signal's payload, once one named <paramref name="name"/> has been delivered and not taken yet.</summary>
    public Task<ReadOnlyMemory<byte>> WaitForSignal(string name)
    {
        if (_signals.TryGetValue(name, out var queue) && queue.Count > 0)
        {
            return Task.FromResult(queue.Dequeue());
        }

        if (CancellationToken.IsCancellationRequested)
        {
            return Task.FromCanceled<ReadOnlyMemory<byte>>(CancellationToken);
        }

        var waiter = new TaskCompletionSource<ReadOnlyMemory<byte>>(TaskCreationOptions.RunContinuationsAsynchronously);
        if (!_signalWaiters.TryGetValue(name, out var waiters))
        {
            _signalWaiters[name] = waiters = new Queue<TaskCompletionSource<ReadOnlyMemory<byte>>>();
        }

        waiters.Enqueue(waiter);
        CancellationToken.Register(() => waiter.TrySetCanceled(CancellationToken));
        return waiter.Task;
    }

    /// <summary>A new replay-safe GUID (derived from the workflow id, the run and a counter).</summary>
    public Guid NewGuid()
    {
        Span<byte> bytes = stackalloc byte[16];
        ulong high = System.IO.Hashing.XxHash64.HashToUInt64(System.Text.Encoding.UTF8.GetBytes($"{Id}/{RunNumber}/{_guids}/a"));
        ulong low = System.IO.Hashing.XxHash64.HashToUInt64(System.Text.Encoding.UTF8.GetBytes($"{Id}/{RunNumber}/{_guids}/b"));
        _guids++;
        BitConverter.TryWriteBytes(bytes, high);
        BitConverter.TryWriteBytes(bytes[8..], low);
        bytes[7] = (byte)((bytes[7] & 0x0F) | 0x40); // version 4
        bytes[8] = (byte)((bytes[8] & 0x3F) | 0x80); // RFC 4122 variant
        return new Guid(bytes);
    }

    // ---- The loop ----

    private void Deliver(HistoryEvent e)
    {
        _now = e.Timestamp;
        switch (e.Kind)
        {
            case HistoryEventKind.StepScheduled or HistoryEventKind.TimerScheduled or HistoryEventKind.ChildScheduled:
                if (!_pending.TryGetValue(e.Seq, out var issued) && e.Seq >= _nextSeq)
                {
                    Diverge($"its history has {Describe(e)} (history event {e.Index}), which the workflow code did not issue");
                }

                break;
            case HistoryEventKind.StepCompleted or HistoryEventKind.ChildCompleted or HistoryEventKind.TimerFired:
                Resolve(e, command => command.Completion.TrySetResult(e.Data));
                break;
            case HistoryEventKind.StepFailed:
                Resolve(e, command => command.Completion.TrySetException(new StepFailedException(command.Name, command.Seq, e.Name ?? "unknown", $"Step {command.Seq} '{command.Name}' failed: {e.Text}")));
                break;
            case HistoryEventKind.ChildFailed:
                Resolve(e, command => command.Completion.TrySetException(new ChildWorkflowFailedException(command.ChildId ?? "?", e.Name ?? "unknown", $"Child workflow '{command.ChildId}' did not complete: {e.Text}")));
                break;
            case HistoryEventKind.SignalReceived:
                DeliverSignal(e.Name ?? string.Empty, e.Data);
                break;
            case HistoryEventKind.CancelRequested:
                _cancelRequested.Cancel();
                break;
            default:
                // WorkflowStarted and version markers need nothing at delivery.
                break;
        }
    }

    private void Resolve(HistoryEvent e, Action<WorkflowCommand> complete)
    {
        if (_pending.Remove(e.Seq, out var command))
        {
            Interlocked.Decrement(ref _pendingCount);
            complete(command);
        }
        else if (e.Seq >= _nextSeq)
        {
            Diverge($"its history has the outcome of command {e.Seq} (history event {e.Index}), which the workflow code did not issue");
        }

        // Otherwise the code stopped waiting for it already (a cancelled timer): nothing to do.
    }

    private void DeliverSignal(string name, ReadOnlyMemory<byte> payload)
    {
        if (_signalWaiters.TryGetValue(name, out var waiters))
        {
            while (waiters.TryDequeue(out var waiter))
            {
                if (waiter.TrySetResult(payload))
                {
                    return;
                }
            }
        }

        if (!_signals.TryGetValue(name, out var queue))
        {
            _signals[name] = queue = new Queue<ReadOnlyMemory<byte>>();
        }

        queue.Enqueue(payload);
    }

    /// <summary>Once the replay is over: records new version markers and starts an executor for every waiting command.</summary>
    private async Task IssueAsync(CancellationToken token)
    {
        if (_markersToAppend.Count > 0)
        {
            var markers = _markersToAppend.ToArray();
            _markersToAppend.Clear();
            await _engine.AppendInLocalActionAsync(this, run =>
            {
                foreach (var (changeId, version) in markers)
                {
                    run.TryAppend(HistoryEventKind.VersionMarker, version, changeId);
                }
            }, token).ConfigureAwait(false);
        }

        foreach (var command in _pending.Values)
        {
            if (!command.Started)
            {
                command.Started = true;
                _engine.Executors.Start(this, command, scheduled: _replayedCommands.ContainsKey(command.Seq));
            }
        }
    }

    private async Task FinishAsync(Task<byte[]> body, CancellationToken token)
    {
        // The code ended; if its history goes on with commands it never issued, the code changed under it.
        HistoryEvent[] rest;
        lock (_lock)
        {
            rest = _history.Skip(_delivered).ToArray();
        }

        foreach (var e in rest)
        {
            if (e.IsCommand && e.Seq >= _nextSeq)
            {
                _engine.StopRun(this, new WorkflowNonDeterminismException(Id, $"Workflow '{Id}' run {RunNumber} diverged from its history: the code returned, but its history goes on with {Describe(e)} (history event {e.Index})."));
                return;
            }
        }

        await RecordMarkersAndStopStartingAsync(token).ConfigureAwait(false);
        if (body.IsCompletedSuccessfully)
        {
            await _engine.CloseRunAsync(this, HistoryEventKind.WorkflowCompleted, null, null, body.Result, token).ConfigureAwait(false);
            return;
        }

        var error = body.Exception?.InnerException ?? new TaskCanceledException(body);
        switch (error)
        {
            case ContinueAsNewException next:
                await _engine.ContinueAsNewAsync(this, next.Input, UnconsumedSignals(rest), token).ConfigureAwait(false);
                break;
            case OperationCanceledException when _cancelRequested.IsCancellationRequested:
                await _engine.CloseRunAsync(this, HistoryEventKind.WorkflowCancelled, nameof(WorkflowStatus.Cancelled), "The workflow was cancelled.", default, token).ConfigureAwait(false);
                break;
            default:
                await _engine.CloseRunAsync(this, HistoryEventKind.WorkflowFailed, error.GetType().FullName, error.Message, default, token).ConfigureAwait(false);
                break;
        }
    }

    private async Task RecordMarkersAndStopStartingAsync(CancellationToken token)
    {
        // The code no longer waits for its pending commands: no executor is started for them.
        foreach (var command in _pending.Values)
        {
            command.Started = true;
        }

        await IssueAsync(token).ConfigureAwait(false);
    }

    private List<(string Name, ReadOnlyMemory<byte> Payload)> UnconsumedSignals(HistoryEvent[] undelivered)
    {
        var signals = new List<(string, ReadOnlyMemory<byte>)>();
        foreach (var (name, queue) in _signals)
        {
            foreach (var payload in queue)
            {
                signals.Add((name, payload));
            }
        }

        foreach (var e in undelivered)
        {
            if (e.Kind == HistoryEventKind.SignalReceived)
            {
                signals.Add((e.Name ?? string.Empty, e.Data));
            }
        }

        return signals;
    }

    private bool TryFindPendingMarker(string changeId, out int version)
    {
        foreach (var (id, v) in _markersToAppend)
        {
            if (id == changeId)
            {
                version = v;
                return true;
            }
        }

        version = 0;
        return false;
    }

    private void Diverge(string what)
    {
        _divergence ??= new WorkflowNonDeterminismException(Id, $"Workflow '{Id}' run {RunNumber} diverged from its history: {what}. The run is stopped; fix the code (or guard the change with GetVersion) and restart.");
    }

    private static string Describe(HistoryEvent e) => e.Kind switch
    {
        HistoryEventKind.StepScheduled => $"step {e.Seq} '{e.Name}'",
        HistoryEventKind.TimerScheduled => $"timer {e.Seq}",
        HistoryEventKind.ChildScheduled => $"child workflow {e.Seq} '{e.Name}' ({e.Text})",
        _ => $"{e.Kind} of command {e.Seq}",
    };

    private static int Seed(string id, int run) =>
        unchecked((int)System.IO.Hashing.XxHash32.HashToUInt32(System.Text.Encoding.UTF8.GetBytes($"{id}/{run}")));
}
