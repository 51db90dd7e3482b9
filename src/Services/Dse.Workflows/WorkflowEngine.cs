using System.Text.Json;
using Dse.Services;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Workflows;

/// <summary>
/// Durable workflows on a speculative history: every workflow's history lives in one <see cref="SpeculativeLog"/>, the
/// engine's StateObject. Speculative, a workflow goes on as soon as an event is appended; the log persists in the
/// background and the coordinator's boundary says what is recoverable. Not speculative (the log's
/// <c>DseOptions.Speculative = false</c>), every append is persisted before the workflow goes on, as Temporal, Durable
/// Functions or DBOS do. A rollback of the log ends the engine's generation: every open workflow is rebuilt from what the
/// log kept and resumes by deterministic replay. Guide: docs/workflows.md.
/// </summary>
/// <remarks>
/// <para>The engine does not own the log: the host connects it to the coordinator before <see cref="StartAsync"/> and
/// disposes it after the engine.</para>
/// <para>Lock order: the engine's lock, then a run's lock. A run's loop and executors never hold a run's lock while they
/// take the engine's.</para>
/// </remarks>
public sealed class WorkflowEngine : IAsyncDisposable
{
    private static readonly TimeSpan DrainTimeout = TimeSpan.FromSeconds(5);
    private static readonly TimeSpan RetryLoad = TimeSpan.FromMilliseconds(200);

    private readonly WorkflowRegistry _registry;
    private readonly ILogger _logger;
    private readonly CancellationTokenSource _disposed = new();
    private readonly SemaphoreSlim _reloadSignal = new(0, 1);
    private readonly Lock _lock = new();

    // Guarded by _lock: the instances of the current generation, the generation (null until the first load, and while a
    // reload replaces it the ended one stays here), what the next reload is for, and who waits for which outcome.
    private Dictionary<string, WorkflowInstance> _instances = new(StringComparer.Ordinal);
    private Generation? _generation;
    private TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private string? _reloadReason;
    private long _generations;
    private readonly OutcomeWaiters _waiters = new();

    private Task? _reloader;

    /// <summary>Creates an engine over <paramref name="log"/> running the types in <paramref name="registry"/>.</summary>
    /// <exception cref="ArgumentException">An option is invalid; the message names it.</exception>
    public WorkflowEngine(SpeculativeLog log, WorkflowRegistry registry, WorkflowEngineOptions? options = null)
    {
        ArgumentNullException.ThrowIfNull(log);
        ArgumentNullException.ThrowIfNull(registry);
        Options = options ?? new WorkflowEngineOptions();
        Options.Validate();
        Log = log;
        _registry = registry;
        _logger = (Options.LoggerFactory ?? NullLoggerFactory.Instance).CreateLogger<WorkflowEngine>();
        Executors = new CommandExecutors(this, _logger);
    }

    /// <summary>The log holding every workflow's history.</summary>
    public SpeculativeLog Log { get; }

    /// <summary>The engine's options.</summary>
    public WorkflowEngineOptions Options { get; }

    /// <summary>How many times the engine has loaded its history (1 after <see cref="StartAsync"/>, one more per rollback).</summary>
    public long Generations => Interlocked.Read(ref _generations);

    internal CommandExecutors Executors { get; }

    /// <summary>
    /// Reads the history and resumes every open workflow. Call once, after the log is connected to the coordinator.
    /// </summary>
    public async Task StartAsync(CancellationToken cancellationToken = default)
    {
        if (_reloader is not null)
        {
            throw new InvalidOperationException("The workflow engine is started already.");
        }

        Log.Restored += OnLogRestored;
        await LoadAsync("start", cancellationToken).ConfigureAwait(false);
        _reloader = Task.Run(ReloadLoopAsync);
    }

    /// <summary>Completes once the engine serves (started, and not in the middle of a reload).</summary>
    public Task WhenReadyAsync(CancellationToken cancellationToken = default)
    {
        lock (_lock)
        {
            return _ready.Task.WaitAsync(cancellationToken);
        }
    }

    // ---- Client calls inside an action of the log (for services that run DSE by hand) ----

    /// <summary>
    /// Starts workflow <paramref name="id"/> of type <paramref name="type"/> on serialized <paramref name="input"/>, or
    /// returns the instance with that id if there is one (nothing is recorded then). Call inside an action of <see cref="Log"/>.
    /// </summary>
    /// <exception cref="UnknownWorkflowTypeException">No such type is registered.</exception>
    /// <exception cref="ArgumentException">The id is empty or too long, the input does not deserialize as the type's input, or the id exists with another type.</exception>
    /// <exception cref="WorkflowEngineUnavailableException">The engine is reloading or not started; nothing was recorded.</exception>
    public WorkflowStartResult StartInAction(string type, string id, ReadOnlyMemory<byte> input)
    {
        ArgumentNullException.ThrowIfNull(type);
        WorkflowInputChecks.CheckId(id);
        if (!_registry.TryGet(type, out var definition))
        {
            throw new UnknownWorkflowTypeException(type);
        }

        try
        {
            definition.CheckInput(input, Options.SerializerOptions);
        }
        catch (JsonException ex)
        {
            throw new ArgumentException($"The input of workflow '{id}' does not deserialize as {definition.InputType.Name}: {ex.Message}", nameof(input), ex);
        }

        WorkflowRun run;
        lock (_lock)
        {
            var generation = CurrentGeneration();
            if (_instances.TryGetValue(id, out var existing))
            {
                if (existing.Type != type)
                {
                    throw new ArgumentException($"Workflow '{id}' exists already, of type '{existing.Type}', not '{type}'.", nameof(type));
                }

                return new WorkflowStartResult(id, existing.Run, AlreadyStarted: true);
            }

            var started = new HistoryEvent(id, 1, 0, HistoryEventKind.WorkflowStarted, Options.TimeProvider.GetUtcNow(), 0, type, null, input.ToArray());
            AppendToLog(started);
            run = new WorkflowRun(this, definition, generation, [started]);
            _instances[id] = new WorkflowInstance(id, type, 1) { Current = run };
        }

        Launch(run);
        return new WorkflowStartResult(id, 1, AlreadyStarted: false);
    }

    /// <summary>Records signal <paramref name="name"/> with a JSON <paramref name="payload"/> for workflow <paramref name="id"/>. Call inside an action of <see cref="Log"/>.</summary>
    /// <exception cref="WorkflowNotFoundException">No such workflow.</exception>
    /// <exception cref="WorkflowNotRunningException">It has ended or is stopped.</exception>
    /// <exception cref="ArgumentException">The payload is not JSON, or too large.</exception>
    /// <exception cref="WorkflowEngineUnavailableException">The engine is reloading or not started; nothing was recorded.</exception>
    public void SignalInAction(string id, string name, ReadOnlyMemory<byte> payload)
    {
        ArgumentNullException.ThrowIfNull(id);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        WorkflowInputChecks.CheckJson(payload, nameof(payload));
        AppendToRunning(id, run => run.TryAppend(HistoryEventKind.SignalReceived, 0, name, data: payload.ToArray()), cancel: false);
    }

    /// <summary>Records a cancellation request for workflow <paramref name="id"/> (once; a second request changes nothing). Call inside an action of <see cref="Log"/>.</summary>
    /// <exception cref="WorkflowNotFoundException">No such workflow.</exception>
    /// <exception cref="WorkflowNotRunningException">It has ended or is stopped.</exception>
    /// <exception cref="WorkflowEngineUnavailableException">The engine is reloading or not started; nothing was recorded.</exception>
    public void CancelInAction(string id)
    {
        ArgumentNullException.ThrowIfNull(id);
        AppendToRunning(id, run => run.TryAppend(HistoryEventKind.CancelRequested), cancel: true);
    }

    /// <summary>The status of workflow <paramref name="id"/>, as the engine knows it now (speculatively).</summary>
    /// <exception cref="WorkflowNotFoundException">No such workflow.</exception>
    /// <exception cref="WorkflowEngineUnavailableException">The engine is reloading or not started.</exception>
    public WorkflowDescription Describe(string id)
    {
        ArgumentNullException.ThrowIfNull(id);
        lock (_lock)
        {
            CurrentGeneration();
            return _instances.TryGetValue(id, out var instance)
                ? instance.Describe()
                : throw new WorkflowNotFoundException(id, $"No workflow '{id}' exists.");
        }
    }

    /// <summary>
    /// Completes once workflow <paramref name="id"/> has an outcome recorded (Completed, Failed or Cancelled) or is
    /// stopped. The outcome is speculative: a caller outside DSE must pass a barrier before showing it (as
    /// <see cref="GetResultAsync{TResult}"/> does).
    /// </summary>
    /// <exception cref="WorkflowNotFoundException">No such workflow.</exception>
    public Task<WorkflowOutcome> WaitForOutcomeAsync(string id, CancellationToken cancellationToken = default) =>
        WaitForOutcomeAsync(id, includeStopped: true, cancellationToken);

    // ---- The in-process client: each call runs its own local action on the log ----

    /// <summary>
    /// Starts workflow <paramref name="id"/> (idempotent by id; see <see cref="StartInAction"/>) and returns once the start
    /// is recoverable, so a caller can rely on it.
    /// </summary>
    public ValueTask<WorkflowStartResult> StartWorkflowAsync<TInput>(string type, string id, TInput input, CancellationToken cancellationToken = default)
    {
        byte[] bytes = JsonSerializer.SerializeToUtf8Bytes(input, Options.SerializerOptions);
        return InLocalActionAsync(() => StartInAction(type, id, bytes), cancellationToken);
    }

    /// <summary>
    /// Starts workflow <paramref name="id"/> (or joins it, if it exists) and returns its result once recoverable: one
    /// barrier for both, since the result depends on the start.
    /// </summary>
    public async ValueTask<TResult> ExecuteAsync<TInput, TResult>(string type, string id, TInput input, CancellationToken cancellationToken = default)
    {
        byte[] bytes = JsonSerializer.SerializeToUtf8Bytes(input, Options.SerializerOptions);
        while (true)
        {
            await InLocalActionAsync(() => StartInAction(type, id, bytes), cancellationToken, speculative: true).ConfigureAwait(false);
            try
            {
                return await GetResultAsync<TResult>(id, cancellationToken).ConfigureAwait(false);
            }
            catch (WorkflowNotFoundException)
            {
                // A rollback took the start away: start again.
            }
        }
    }

    /// <summary>Sends signal <paramref name="name"/> to workflow <paramref name="id"/> (see <see cref="SignalInAction"/>) and returns once it is recoverable.</summary>
    public async ValueTask SignalAsync<T>(string id, string name, T payload, CancellationToken cancellationToken = default)
    {
        byte[] bytes = JsonSerializer.SerializeToUtf8Bytes(payload, Options.SerializerOptions);
        await InLocalActionAsync(() => SignalInAction(id, name, bytes), cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Asks workflow <paramref name="id"/> to cancel (see <see cref="CancelInAction"/>) and returns once the request is recoverable.</summary>
    public async ValueTask CancelAsync(string id, CancellationToken cancellationToken = default) =>
        await InLocalActionAsync(() => CancelInAction(id), cancellationToken).ConfigureAwait(false);

    /// <summary>
    /// Waits for workflow <paramref name="id"/>'s result and returns it once it is recoverable (after a barrier): what
    /// this returns is never rolled back. If the outcome is rolled back before that, it waits for the resumed workflow.
    /// </summary>
    /// <exception cref="WorkflowFailedException">The workflow failed.</exception>
    /// <exception cref="WorkflowCancelledException">It was cancelled.</exception>
    /// <exception cref="WorkflowStoppedException">It is stopped.</exception>
    /// <exception cref="WorkflowNotFoundException">No such workflow.</exception>
    public async ValueTask<TResult> GetResultAsync<TResult>(string id, CancellationToken cancellationToken = default)
    {
        var outcome = await GetRecoverableOutcomeAsync(id, cancellationToken).ConfigureAwait(false);
        return outcome.Status switch
        {
            WorkflowStatus.Completed => JsonSerializer.Deserialize<TResult>(outcome.Result.Span, Options.SerializerOptions)!,
            WorkflowStatus.Failed => throw new WorkflowFailedException(id, outcome.ErrorType ?? "unknown", $"Workflow '{id}' failed: {outcome.ErrorMessage}"),
            WorkflowStatus.Cancelled => throw new WorkflowCancelledException(id, $"Workflow '{id}' was cancelled."),
            _ => throw new WorkflowStoppedException(id, $"Workflow '{id}' is stopped: {outcome.ErrorMessage}"),
        };
    }

    /// <summary>
    /// Waits for workflow <paramref name="id"/>'s outcome and returns it once it is recoverable (after a barrier); a
    /// stopped workflow's outcome is returned at once.
    /// </summary>
    public async Task<WorkflowOutcome> GetRecoverableOutcomeAsync(string id, CancellationToken cancellationToken = default)
    {
        while (true)
        {
            await WhenReadyAsync(cancellationToken).ConfigureAwait(false);
            var outcome = await WaitForOutcomeAsync(id, cancellationToken).ConfigureAwait(false);
            if (outcome.Status == WorkflowStatus.Stopped)
            {
                return outcome;
            }

            try
            {
                if (OutcomeVertex(id, outcome) is { } vertex)
                {
                    // Appended by this generation: wait for exactly the version that holds it.
                    await Log.WaitForCommitAsync(vertex.Version, vertex.WorldLine, cancellationToken).ConfigureAwait(false);
                    return outcome;
                }

                // Read back from the log: a barrier on the current version, which is at or after the one holding it.
                Sthread sthread;
                await Log.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
                bool current;
                try
                {
                    current = IsOutcomeCurrent(id, outcome);
                }
                finally
                {
                    sthread = Log.Detach();
                }

                if (current)
                {
                    await sthread.BarrierAsync(cancellationToken).ConfigureAwait(false);
                    return outcome;
                }
            }
            catch (DseRolledBackException)
            {
                // The outcome was rolled back; the workflow resumes and ends again.
            }
        }
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        if (_disposed.IsCancellationRequested)
        {
            return;
        }

        Log.Restored -= OnLogRestored;
        Generation? generation;
        lock (_lock)
        {
            _disposed.Cancel();
            generation = _generation;
            _generation = null;
            _ready = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            _ready.SetException(new WorkflowEngineUnavailableException("The workflow engine is disposed."));
            _waiters.FailAll(new WorkflowEngineUnavailableException("The workflow engine is disposed."));
        }

        generation?.End();
        if (_reloader is not null)
        {
            await _reloader.ConfigureAwait(false);
        }

        if (generation is not null)
        {
            await generation.DrainAsync(DrainTimeout).ConfigureAwait(false);
            generation.Dispose();
        }

        _disposed.Dispose();
    }

    // ---- Used by runs and executors ----

    /// <summary>
    /// Whether runs of <paramref name="generation"/> may append now; <paramref name="restored"/> says the log was restored
    /// since the generation began (the caller then has the history reloaded, with no lock held). Call inside an action of
    /// the log.
    /// </summary>
    internal bool MayAppend(Generation generation, out bool restored)
    {
        restored = !generation.HasEnded && Log.RestoreCount != generation.RestoreCount;
        return !generation.HasEnded && !restored;
    }

    /// <summary>Encodes and appends one event. Call inside an action of the log.</summary>
    /// <exception cref="ArgumentException">The event is larger than a log entry may be.</exception>
    internal void AppendToLog(HistoryEvent e)
    {
        byte[] entry = HistoryCodec.Encode(e);
        if (entry.Length > Log.MaxEntryBytes)
        {
            throw new ArgumentException($"A history event of workflow '{e.WorkflowId}' would be {entry.Length} bytes; the log takes at most {Log.MaxEntryBytes}.");
        }

        Log.Append(entry);
    }

    /// <summary>Runs <paramref name="append"/> in a local action of the log (persisted before returning when not speculative).</summary>
    internal async Task AppendInLocalActionAsync(WorkflowRun run, Action<WorkflowRun> append, CancellationToken cancellationToken)
    {
        await Log.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            append(run);
        }
        finally
        {
            try
            {
                await Log.EndActionAsync(cancellationToken).ConfigureAwait(false);
            }
            catch (DseRolledBackException)
            {
                RequestReload($"an append of workflow '{run.Id}' was rolled back");
            }
        }
    }

    /// <summary>Records the end of <paramref name="run"/> and tells whoever waits for it.</summary>
    internal async Task CloseRunAsync(WorkflowRun run, HistoryEventKind kind, string? errorType, string? message, ReadOnlyMemory<byte> result, CancellationToken cancellationToken)
    {
        bool closed = false;
        (long, long) vertex = default;
        await AppendInLocalActionAsync(run, r =>
        {
            closed = r.TryAppend(kind, 0, errorType, message, result, closes: true);
            vertex = (Log.CurrentVersion, Log.WorldLine);
        }, cancellationToken).ConfigureAwait(false);
        if (!closed)
        {
            return;
        }

        var status = kind switch
        {
            HistoryEventKind.WorkflowCompleted => WorkflowStatus.Completed,
            HistoryEventKind.WorkflowCancelled => WorkflowStatus.Cancelled,
            _ => WorkflowStatus.Failed,
        };
        SetOutcome(run, new WorkflowOutcome(status, result, errorType, message), run.HistoryLength, vertex);
    }

    /// <summary>Ends <paramref name="run"/> and starts the next run of its workflow with <paramref name="input"/>, in one action.</summary>
    internal async Task ContinueAsNewAsync(WorkflowRun run, ReadOnlyMemory<byte> input, List<(string Name, ReadOnlyMemory<byte> Payload)> signals, CancellationToken cancellationToken)
    {
        WorkflowRun? next = null;
        await AppendInLocalActionAsync(run, r =>
        {
            lock (_lock)
            {
                if (!_instances.TryGetValue(r.Id, out var instance) || instance.Current != r || !r.TryAppend(HistoryEventKind.ContinuedAsNew, 0, data: input, closes: true))
                {
                    return;
                }

                _registry.TryGet(r.Type, out var definition);
                var now = Options.TimeProvider.GetUtcNow();
                var history = new List<HistoryEvent> { new(r.Id, r.RunNumber + 1, 0, HistoryEventKind.WorkflowStarted, now, 0, r.Type, null, input) };
                foreach (var (name, payload) in signals)
                {
                    history.Add(new HistoryEvent(r.Id, r.RunNumber + 1, history.Count, HistoryEventKind.SignalReceived, now, 0, name, null, payload));
                }

                foreach (var e in history)
                {
                    AppendToLog(e);
                }

                next = new WorkflowRun(this, definition, r.Generation, history);
                instance.Run = next.RunNumber;
                instance.Current = next;
            }
        }, cancellationToken).ConfigureAwait(false);
        if (next is not null)
        {
            Launch(next);
        }
    }

    /// <summary>Stops <paramref name="run"/> (its replay diverged, or it failed inside the engine); nothing is recorded.</summary>
    internal void StopRun(WorkflowRun run, Exception reason)
    {
        if (run.Generation.HasEnded)
        {
            return;
        }

        run.Close();
        WorkflowLogMessages.LogRunStopped(_logger, run.Id, run.RunNumber, reason);
        SetOutcome(run, new WorkflowOutcome(WorkflowStatus.Stopped, default, reason.GetType().FullName, reason.Message), run.HistoryLength, null);
    }

    /// <summary>Ends the current generation and has the history reloaded.</summary>
    internal void RequestReload(string reason)
    {
        lock (_lock)
        {
            if (_generation is null || _generation.HasEnded || _disposed.IsCancellationRequested)
            {
                return;
            }

            _generation.End();
            _reloadReason = reason;
            _ready = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        try
        {
            _reloadSignal.Release();
        }
        catch (SemaphoreFullException)
        {
            // A reload is signalled already.
        }
    }

    /// <summary>See <see cref="WaitForOutcomeAsync(string, CancellationToken)"/>; <paramref name="includeStopped"/>: whether a stop counts.</summary>
    internal Task<WorkflowOutcome> WaitForOutcomeAsync(string id, bool includeStopped, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(id);
        lock (_lock)
        {
            if (_disposed.IsCancellationRequested)
            {
                throw new WorkflowEngineUnavailableException("The workflow engine is disposed.");
            }

            if (_instances.TryGetValue(id, out var instance) && instance.Outcome is { } outcome && (includeStopped || outcome.Status != WorkflowStatus.Stopped))
            {
                return Task.FromResult(outcome);
            }

            if (instance is null && _generation is { HasEnded: false })
            {
                throw new WorkflowNotFoundException(id, $"No workflow '{id}' exists.");
            }

            return _waiters.Add(id, includeStopped, cancellationToken);
        }
    }

    // ---- Loading ----

    private void OnLogRestored(object? sender, long version) => RequestReload($"the log was restored to version {version}");

    private async Task ReloadLoopAsync()
    {
        var token = _disposed.Token;
        try
        {
            while (true)
            {
                await _reloadSignal.WaitAsync(token).ConfigureAwait(false);
                Generation? ended;
                string reason;
                lock (_lock)
                {
                    ended = _generation;
                    reason = _reloadReason ?? "requested";
                }

                if (ended is not null)
                {
                    await ended.DrainAsync(DrainTimeout).ConfigureAwait(false);
                }

                while (true)
                {
                    try
                    {
                        await LoadAsync(reason, token).ConfigureAwait(false);
                        break;
                    }
                    catch (Exception ex) when (!token.IsCancellationRequested)
                    {
                        WorkflowLogMessages.LogLoadFailed(_logger, ex);
                        await Task.Delay(RetryLoad, token).ConfigureAwait(false);
                    }
                }
            }
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            // Disposed.
        }
    }

    private async Task LoadAsync(string reason, CancellationToken cancellationToken)
    {
        while (true)
        {
            long restoreCount = Log.RestoreCount;
            var loaded = await HistoryLoader.LoadAsync(Log, restoreCount, _logger, cancellationToken).ConfigureAwait(false);
            if (loaded is null)
            {
                continue;
            }

            var generation = new Generation(Interlocked.Increment(ref _generations), restoreCount);
            WorkflowLogMessages.LogReload(_logger, generation.Number, reason);
            var instances = new Dictionary<string, WorkflowInstance>(StringComparer.Ordinal);
            var runs = new List<WorkflowRun>();
            int closed = 0;
            foreach (var workflow in loaded.Value.Workflows)
            {
                var instance = Build(workflow, generation, out var run);
                instances[workflow.Id] = instance;
                if (run is not null)
                {
                    runs.Add(run);
                }
                else
                {
                    closed++;
                }
            }

            lock (_lock)
            {
                if (_disposed.IsCancellationRequested)
                {
                    return;
                }

                if (Log.RestoreCount != restoreCount)
                {
                    continue; // restored while building: load again
                }

                _generation?.Dispose();
                _generation = generation;
                _instances = instances;
                foreach (var instance in instances.Values)
                {
                    if (instance.Outcome is { } outcome)
                    {
                        _waiters.Complete(instance.Id, outcome);
                    }
                }

                _waiters.FailMissing(instances.ContainsKey);

                _ready.TrySetResult();
            }

            WorkflowLogMessages.LogLoaded(_logger, generation.Number, runs.Count, closed, loaded.Value.Events);
            foreach (var run in runs)
            {
                Launch(run);
            }

            return;
        }
    }

    private WorkflowInstance Build(HistoryLoader.LoadedWorkflow workflow, Generation generation, out WorkflowRun? run)
    {
        run = null;
        string type = workflow.Events.Count > 0 && workflow.Events[0].Name is { } name ? name : "?";
        var instance = new WorkflowInstance(workflow.Id, type, workflow.Run) { ClosedHistoryLength = workflow.Events.Count };
        if (workflow.Problem is not null)
        {
            var error = new WorkflowHistoryCorruptException(workflow.Id, $"The history of workflow '{workflow.Id}' run {workflow.Run} is damaged: {workflow.Problem}. The workflow is stopped.");
            WorkflowLogMessages.LogRunStopped(_logger, workflow.Id, workflow.Run, error);
            Stop(instance, error);
        }
        else if (workflow.Terminal is { } end)
        {
            instance.Status = end.Kind switch
            {
                HistoryEventKind.WorkflowCompleted => WorkflowStatus.Completed,
                HistoryEventKind.WorkflowCancelled => WorkflowStatus.Cancelled,
                _ => WorkflowStatus.Failed,
            };
            instance.Outcome = new WorkflowOutcome(instance.Status, end.Data, end.Name, end.Text);
        }
        else if (!_registry.TryGet(type, out var definition))
        {
            Stop(instance, new UnknownWorkflowTypeException(type));
        }
        else
        {
            instance.CancelRequested = workflow.Events.Exists(e => e.Kind == HistoryEventKind.CancelRequested);
            run = new WorkflowRun(this, definition, generation, workflow.Events);
            instance.Current = run;
        }

        return instance;
    }

    private static void Stop(WorkflowInstance instance, Exception reason)
    {
        instance.Status = WorkflowStatus.Stopped;
        instance.Outcome = new WorkflowOutcome(WorkflowStatus.Stopped, default, reason.GetType().FullName, reason.Message);
    }

    // ---- Helpers ----

    private void Launch(WorkflowRun run) => run.Generation.Track(Task.Run(run.RunAsync));

    /// <summary>The generation that serves now: not ended, and the log not restored since it loaded. Under _lock.</summary>
    private Generation? ServingGeneration() =>
        _generation is { HasEnded: false } generation && Log.RestoreCount == generation.RestoreCount ? generation : null;

    private Generation CurrentGeneration() =>
        ServingGeneration()
            ?? throw new WorkflowEngineUnavailableException(_disposed.IsCancellationRequested
                ? "The workflow engine is disposed."
                : "The workflow engine is loading its history (it starts, or a rollback restored its log); retry.");

    private void AppendToRunning(string id, Func<WorkflowRun, bool> append, bool cancel)
    {
        lock (_lock)
        {
            CurrentGeneration();
            if (!_instances.TryGetValue(id, out var instance))
            {
                throw new WorkflowNotFoundException(id, $"No workflow '{id}' exists.");
            }

            if (instance.Status != WorkflowStatus.Running || instance.Current is not { } run)
            {
                throw new WorkflowNotRunningException(id, instance.Status, $"Workflow '{id}' is {instance.Status}; nothing was recorded.");
            }

            if (cancel && instance.CancelRequested)
            {
                return;
            }

            if (!append(run))
            {
                throw new WorkflowEngineUnavailableException($"Workflow '{id}' is ending or reloading; nothing was recorded, retry.");
            }

            instance.CancelRequested |= cancel;
        }
    }

    private void SetOutcome(WorkflowRun run, WorkflowOutcome outcome, int historyLength, (long, long)? vertex)
    {
        lock (_lock)
        {
            if (run.Generation != _generation || !_instances.TryGetValue(run.Id, out var instance) || instance.Current != run)
            {
                return;
            }

            instance.Status = outcome.Status;
            instance.Outcome = outcome;
            instance.ClosedHistoryLength = historyLength;
            instance.OutcomeVertex = vertex;
            instance.Current = null;
            _waiters.Complete(run.Id, outcome);
        }
    }

    private (long Version, long WorldLine)? OutcomeVertex(string id, WorkflowOutcome outcome)
    {
        lock (_lock)
        {
            return _instances.TryGetValue(id, out var instance) && ReferenceEquals(instance.Outcome, outcome) ? instance.OutcomeVertex : null;
        }
    }

    /// <summary>
    /// Whether <paramref name="outcome"/> (from <see cref="WaitForOutcomeAsync(string, CancellationToken)"/>) is still workflow
    /// <paramref name="id"/>'s outcome: nothing rolled it back. Call inside an action of <see cref="Log"/>: then the action's
    /// version is at or after the one that recorded it, so a barrier on the action covers it.
    /// </summary>
    public bool IsOutcomeCurrent(string id, WorkflowOutcome outcome)
    {
        lock (_lock)
        {
            return ServingGeneration() is not null && _instances.TryGetValue(id, out var instance) && ReferenceEquals(instance.Outcome, outcome);
        }
    }

    /// <summary>
    /// Runs <paramref name="call"/> in a local action of the log and, unless <paramref name="speculative"/>, returns only
    /// once what it recorded is recoverable (a barrier); if that is rolled back first, the call is made again.
    /// </summary>
    private async ValueTask<T> InLocalActionAsync<T>(Func<T> call, CancellationToken cancellationToken, bool speculative = false)
    {
        while (true)
        {
            await WhenReadyAsync(cancellationToken).ConfigureAwait(false);
            await Log.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
            T result;
            try
            {
                result = call();
            }
            catch (WorkflowEngineUnavailableException) when (!_disposed.IsCancellationRequested)
            {
                Log.EndAction();
                continue;
            }
            catch
            {
                Log.EndAction();
                throw;
            }

            if (speculative)
            {
                Log.EndAction();
                return result;
            }

            try
            {
                await Log.Detach().BarrierAsync(cancellationToken).ConfigureAwait(false);
                return result;
            }
            catch (DseRolledBackException)
            {
                // What the call recorded was rolled back: make it again.
            }
        }
    }

    private ValueTask<bool> InLocalActionAsync(Action call, CancellationToken cancellationToken) =>
        InLocalActionAsync(() =>
        {
            call();
            return true;
        }, cancellationToken);
}
