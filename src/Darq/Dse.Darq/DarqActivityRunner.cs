using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Dse.Darq;

/// <summary>
/// Runs the activities of one processor: each activity a step of this processor recorded (through
/// <see cref="StepAsync"/>) or the replay brought back (through <see cref="TryStart"/>) is run by its registered
/// handler once the message recording it is committed, retried with backoff until the handler succeeds, and completed by
/// a step of the processor that consumes the activity message and holds what the <see cref="DarqActivityCompleter"/>
/// adds.
/// </summary>
/// <remarks>
/// <para>The handler gets <see cref="DarqActivity.IdempotencyToken"/> (the DARQ's name and the activity's LSN). A run that
/// a crash or a processor restart interrupts before the completion step is durable is run again after the replay with
/// the same token, so an external service that deduplicates by that token performs the activity exactly once; one that
/// does not gets it at least once.</para>
/// <para>Completions are stepped one at a time; the completer is called from the runner's tasks, not from the
/// processor's own loop, so state it shares with the processor needs synchronization.</para>
/// </remarks>
public sealed class DarqActivityRunner : IAsyncDisposable
{
    /// <summary>How many finished activities <see cref="WhenCompletedAsync"/> still answers for.</summary>
    private const int FinishedKept = 1024;

    private readonly DarqProcessor _processor;
    private readonly Darq _darq;
    private readonly DarqActivityRunnerOptions _options;
    private readonly Dictionary<string, DarqActivityHandler> _handlers;
    private readonly DarqActivityCompleter _completer;
    private readonly ILogger _logger;
    private readonly KeyValuePair<string, object?> _tag;
    private readonly CancellationTokenSource _stopping = new();

    /// <summary>Serializes completer calls and completion steps.</summary>
    private readonly SemaphoreSlim _completing = new(1, 1);

    /// <summary>Guards the fields below.</summary>
    private readonly Lock _lock = new();

    /// <summary>Activities started by this runner and not finished, by LSN: an LSN runs at most once at a time.</summary>
    private readonly Dictionary<long, TaskCompletionSource<DarqStepResult>> _running = [];

    /// <summary>The outcomes of the last <see cref="FinishedKept"/> finished activities, and their order.</summary>
    private readonly Dictionary<long, Task<DarqStepResult>> _finished = [];
    private readonly Queue<long> _finishedOrder = new();
    private bool _disposed;

    /// <summary>Creates a runner for a processor's activities.</summary>
    /// <param name="processor">The processor whose steps record and complete the activities.</param>
    /// <param name="options">Handlers, completer and retry delays (copied).</param>
    /// <param name="loggerFactory">Creates the runner's logger; <see langword="null"/> for none.</param>
    /// <exception cref="ArgumentException">The options are invalid; the message names the property.</exception>
    public DarqActivityRunner(DarqProcessor processor, DarqActivityRunnerOptions options, ILoggerFactory? loggerFactory = null)
    {
        ArgumentNullException.ThrowIfNull(processor);
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        _processor = processor;
        _darq = processor.Darq;
        _options = options;
        _handlers = new Dictionary<string, DarqActivityHandler>(options.Handlers, StringComparer.Ordinal);
        _completer = options.Completer!;
        _logger = loggerFactory?.CreateLogger<DarqActivityRunner>() ?? (ILogger)NullLogger.Instance;
        _tag = new KeyValuePair<string, object?>("darq", _darq.Name);
    }

    /// <summary>The processor this runner steps through.</summary>
    public DarqProcessor Processor => _processor;

    /// <summary>How many activities are running (not yet completed or given up).</summary>
    public int RunningCount
    {
        get
        {
            lock (_lock)
            {
                return _running.Count;
            }
        }
    }

    /// <summary>
    /// Steps through the processor and starts the activities the step records (<see cref="DarqStep.AddActivity"/>).
    /// </summary>
    /// <param name="step">The step.</param>
    /// <param name="cancellationToken">Cancels waiting for earlier steps; an appended step is not undone.</param>
    /// <returns>The step's result; the activities' LSNs are among <see cref="DarqStepResult.SelfLsns"/>.</returns>
    /// <exception cref="ArgumentException">The step records an activity with no registered handler; nothing is appended.</exception>
    public async ValueTask<DarqStepResult> StepAsync(DarqStep step, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(step);
        ThrowIfDisposed();
        CheckHandlers(step);
        var result = await _processor.StepAsync(step, cancellationToken).ConfigureAwait(false);
        StartActivities(step, result);
        return result;
    }

    /// <summary>
    /// Takes a batch of steps through the processor (<see cref="DarqProcessor.StepBatchAsync"/>: one gate acquisition,
    /// refused whole) and starts the activities they record, as <see cref="StepAsync"/> does for one step.
    /// </summary>
    /// <param name="steps">The steps, in order.</param>
    /// <param name="cancellationToken">Cancels the batch until its first part is appended (see <see cref="Darq.StepBatchAsync"/>).</param>
    /// <returns>Each step's result, in order.</returns>
    /// <exception cref="ArgumentException">A step records an activity whose name has no handler; nothing is appended.</exception>
    public async ValueTask<IReadOnlyList<DarqStepResult>> StepBatchAsync(IReadOnlyList<DarqStep> steps, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(steps);
        ThrowIfDisposed();
        for (int i = 0; i < steps.Count; i++)
        {
            CheckHandlers(steps[i] ?? throw new ArgumentException($"Step {i} of the batch is null.", nameof(steps)));
        }

        var results = await _processor.StepBatchAsync(steps, cancellationToken).ConfigureAwait(false);
        for (int i = 0; i < results.Count; i++)
        {
            StartActivities(steps[i], results[i]);
        }

        return results;
    }

    /// <summary>
    /// Starts a streamed activity message (from the replay) unless it is already running here; other messages are left
    /// to the caller.
    /// </summary>
    /// <param name="message">A message from the processor's stream.</param>
    /// <returns>Whether the message is an activity (and is now running).</returns>
    /// <exception cref="InvalidOperationException">The activity's name has no registered handler; it stays pending.</exception>
    public bool TryStart(DarqMessage message)
    {
        ThrowIfDisposed();
        if (message.Kind != DarqMessageKind.Activity)
        {
            return false;
        }

        var activity = DarqActivity.FromMessage(message, _darq.Name);
        if (!_handlers.ContainsKey(activity.Name))
        {
            throw new InvalidOperationException(
                $"DARQ '{_darq.Name}' activity at LSN {activity.Lsn} is named '{activity.Name}', which has no handler in this runner " +
                "(DarqActivityRunnerOptions.Handlers); it stays pending.");
        }

        // A replayed message: committed after a DARQ restart, maybe not yet after a processor restart.
        Start(activity, message.Lsn + 1);
        return true;
    }

    /// <summary>The completion of an activity this runner started: the completion step's result.</summary>
    /// <param name="activityLsn">The activity's LSN.</param>
    /// <returns>
    /// A task that ends with the completion step's result; it fails with <see cref="DarqStaleIncarnationException"/> when the
    /// processor was superseded before the completion, and is cancelled when the runner stops first.
    /// </returns>
    /// <exception cref="InvalidOperationException">This runner did not start the activity (or finished it long ago).</exception>
    public Task<DarqStepResult> WhenCompletedAsync(long activityLsn)
    {
        lock (_lock)
        {
            if (_running.TryGetValue(activityLsn, out var running))
            {
                return running.Task;
            }

            if (_finished.TryGetValue(activityLsn, out var finished))
            {
                return finished;
            }
        }

        throw new InvalidOperationException($"DARQ '{_darq.Name}': this runner has not started an activity at LSN {activityLsn}.");
    }

    /// <summary>Stops the runner: cancels running handlers and retry waits and waits for every run to end.</summary>
    public async ValueTask DisposeAsync()
    {
        Task[] running;
        lock (_lock)
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
            running = new Task[_running.Count];
            int i = 0;
            foreach (var run in _running.Values)
            {
                running[i++] = run.Task;
            }
        }

        await _stopping.CancelAsync().ConfigureAwait(false);
        await Task.WhenAll(running).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        _stopping.Dispose();
        _completing.Dispose();
    }

    private void ThrowIfDisposed()
    {
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
        }
    }

    private void CheckHandlers(DarqStep step)
    {
        if (!step.HasActivities)
        {
            return;
        }

        for (int i = 0; i < step.SelfMessages.Count; i++)
        {
            if (step.IsActivity(i))
            {
                string name = DarqActivity.NameOf(step.SelfMessages[i].Span);
                if (!_handlers.ContainsKey(name))
                {
                    throw new ArgumentException(
                        $"The step records activity '{name}', which has no handler in this runner (DarqActivityRunnerOptions.Handlers); nothing was appended.",
                        nameof(step));
                }
            }
        }
    }

    private void StartActivities(DarqStep step, DarqStepResult result)
    {
        if (!step.HasActivities)
        {
            return;
        }

        for (int i = 0; i < step.SelfMessages.Count; i++)
        {
            if (step.IsActivity(i))
            {
                var message = new DarqMessage(result.SelfLsns[i], DarqMessageKind.Activity, step.SelfMessages[i], IsReplay: false);
                Start(DarqActivity.FromMessage(message, _darq.Name), result.DurableAt);
            }
        }
    }

    /// <summary>Starts a run unless one is running for the LSN or the runner stopped (the activity then stays pending).</summary>
    private void Start(DarqActivity activity, long durableAt)
    {
        var done = new TaskCompletionSource<DarqStepResult>(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_lock)
        {
            if (_disposed || !_running.TryAdd(activity.Lsn, done))
            {
                return;
            }

            _finished.Remove(activity.Lsn);
        }

        _ = Task.Run(() => RunAsync(activity, durableAt, done));
    }

    /// <summary>Runs one activity to its completion step; always ends <paramref name="done"/>, never throws.</summary>
    private async Task RunAsync(DarqActivity activity, long durableAt, TaskCompletionSource<DarqStepResult> done)
    {
        var token = _stopping.Token;
        int attempts = 0;
        DarqStepResult? completed = null;
        Exception? failure = null;
        try
        {
            // Only a committed activity runs: the LSN of an entry a crash loses is reused by the next entry appended, and an
            // external service would take that other activity for this one. Under general speculation a committed entry can
            // still be voided by a rollback (and its LSN reused), so there it must be inside the recoverable boundary.
            if (_darq.DseStateObject is not null)
            {
                // durableAt is an exclusive end: the activity's own entry (or its step's) is the one just before it.
                await _darq.WaitForRecoverableAsync(durableAt - 1, token).ConfigureAwait(false);
            }
            else if (_darq.CommittedUntilAddress < durableAt)
            {
                await _darq.CommitAsync(token).ConfigureAwait(false);
            }

            var handler = _handlers[activity.Name];
            DarqLogMessages.ActivityStarted(_logger, _darq.Name, activity.Name, activity.Lsn, activity.IdempotencyToken);
            ReadOnlyMemory<byte> output;
            var delay = _options.RetryMinDelay;
            while (true)
            {
                // A superseded processor's runner stops: the current processor runs the activity from its replay.
                if (_darq.Incarnation != _processor.Incarnation)
                {
                    throw new DarqStaleIncarnationException(_darq.Name, _processor.Incarnation, _darq.Incarnation);
                }

                attempts++;
                DarqInstrumentation.ActivityAttempts.Add(1, _tag);
                try
                {
                    output = await handler(activity, token).ConfigureAwait(false);
                    break;
                }
#pragma warning disable CA1031 // Any failure of the external call is retried with the same token.
                catch (Exception e) when (!token.IsCancellationRequested)
#pragma warning restore CA1031
                {
                    DarqInstrumentation.ActivityFailures.Add(1, _tag);
                    DarqLogMessages.ActivityFailed(_logger, e, _darq.Name, activity.Name, activity.Lsn, attempts, (long)delay.TotalMilliseconds);
                    await Task.Delay(delay, _options.TimeProvider, token).ConfigureAwait(false);
                    delay = TimeSpan.FromTicks(Math.Min(delay.Ticks * 2, _options.RetryMaxDelay.Ticks));
                }
            }

            DarqStepResult result;
            await _completing.WaitAsync(token).ConfigureAwait(false);
            try
            {
                var completion = new DarqStep().Consume(activity.Lsn);
                _completer(activity, output, completion);
                CheckHandlers(completion);
                result = await _processor.StepAsync(completion, token).ConfigureAwait(false);
                StartActivities(completion, result);
            }
            finally
            {
                _completing.Release();
            }

            DarqInstrumentation.ActivityCompletions.Add(1, _tag);
            DarqLogMessages.ActivityCompleted(_logger, _darq.Name, activity.Name, activity.Lsn, attempts, result.CompletionLsn);
            completed = result;
        }
        catch (OperationCanceledException) when (token.IsCancellationRequested)
        {
            failure = new OperationCanceledException(token);
        }
        catch (Exception e) when (e is DarqStaleIncarnationException or DarqStepRejectedException)
        {
            // Superseded, or the activity was consumed by another step: the current processor owns it now.
            DarqLogMessages.ActivityCompletionRefused(_logger, e, _darq.Name, activity.Name, activity.Lsn);
            failure = e;
        }
#pragma warning disable CA1031 // A run must end its task whatever happens; the activity stays pending and is logged.
        catch (Exception e)
#pragma warning restore CA1031
        {
            DarqLogMessages.ActivityError(_logger, e, _darq.Name, activity.Name, activity.Lsn);
            failure = e;
        }
        finally
        {
            lock (_lock)
            {
                _running.Remove(activity.Lsn);
                _finished[activity.Lsn] = done.Task;
                _finishedOrder.Enqueue(activity.Lsn);
                while (_finishedOrder.Count > FinishedKept)
                {
                    _finished.Remove(_finishedOrder.Dequeue());
                }
            }

            // Ended only now, so that whoever awaits it sees the runner's bookkeeping (RunningCount) up to date.
            if (completed is { } result)
            {
                done.TrySetResult(result);
            }
            else if (failure is OperationCanceledException canceled)
            {
                done.TrySetCanceled(canceled.CancellationToken);
            }
            else
            {
                done.TrySetException(failure ?? new InvalidOperationException("The activity run ended without an outcome."));
            }
        }
    }
}
