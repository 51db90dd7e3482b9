using System.Text.Json;

namespace Dse.Workflows;

/// <summary>
/// What workflow code works with. Everything here is replay-safe: the same history gives the same answers, so a workflow
/// resumed after a crash or a rollback takes the same path. The rules for the code around it are in docs/workflows.md.
/// </summary>
/// <remarks>Use the context only from the workflow's own code (it is not thread-safe), and never after <c>ConfigureAwait(false)</c>.</remarks>
public sealed class WorkflowContext
{
    /// <summary>What <see cref="GetVersion"/> returns for a run that got past the change before it existed.</summary>
    public const int DefaultVersion = -1;

    private readonly WorkflowRun _run;

    internal WorkflowContext(WorkflowRun run)
    {
        _run = run;
    }

    /// <summary>The workflow's id.</summary>
    public string WorkflowId => _run.Id;

    /// <summary>The run (1, then one more after each continue-as-new).</summary>
    public int Run => _run.RunNumber;

    /// <summary>The workflow's clock: the time the engine recorded the latest history event the code has seen.</summary>
    public DateTimeOffset UtcNow => _run.UtcNow;

    /// <summary>Replay-safe random numbers, seeded from the workflow id and run.</summary>
    public Random Random => _run.Random;

    /// <summary>Cancelled once someone cancelled the workflow. Timers and signal waits end with <see cref="OperationCanceledException"/>; steps already running finish.</summary>
    public CancellationToken CancellationToken => _run.CancellationToken;

    /// <summary>Whether the code is re-running history it ran before (for logging only: never branch on it).</summary>
    public bool IsReplaying => _run.IsReplaying;

    /// <summary>The attempt options of compensations that name none.</summary>
    internal StepOptions CompensationOptions => _run.CompensationOptions;

    /// <summary>A GUID that is the same on every replay.</summary>
    public Guid NewGuid() => _run.NewGuid();

    /// <summary>
    /// Runs a step and returns its result: the intent is recorded, the step runs (with retries, see <paramref name="options"/>)
    /// with the workflow's DSE header bound, so a gRPC call through a client with <c>DseClientInterceptor</c> carries it
    /// and receives its reply's header, and the result is recorded. On replay the recorded result is returned and the step
    /// does not run again. A step that was scheduled and had no result when the engine restarted runs again with the same
    /// <see cref="StepContext.IdempotencyKey"/>.
    /// </summary>
    /// <exception cref="StepFailedException">The step failed for good.</exception>
    public async Task<T> CallAsync<T>(string name, Func<StepContext, CancellationToken, Task<T>> step, StepOptions? options = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(step);
        options?.Validate();
        var serializer = _run.Serializer;
        var command = new WorkflowCommand(_run.NextSeq, CommandKind.Step, name)
        {
            Step = async (context, token) => JsonSerializer.SerializeToUtf8Bytes(await step(context, token).ConfigureAwait(false), serializer),
            StepOptions = options,
        };
        var result = await _run.Issue(command);
        return JsonSerializer.Deserialize<T>(result.Span, serializer)!;
    }

    /// <summary>Runs a step that returns nothing; see <see cref="CallAsync{T}(string, Func{StepContext, CancellationToken, Task{T}}, StepOptions?)"/>.</summary>
    public Task CallAsync(string name, Func<StepContext, CancellationToken, Task> step, StepOptions? options = null)
    {
        ArgumentNullException.ThrowIfNull(step);
        return CallAsync(name, async (context, token) =>
        {
            await step(context, token).ConfigureAwait(false);
            return true;
        }, options);
    }

    /// <summary>A durable timer: completes once <paramref name="delay"/> has passed on the engine's clock, across restarts.</summary>
    /// <exception cref="OperationCanceledException">The workflow was cancelled first.</exception>
    public Task DelayAsync(TimeSpan delay)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(delay, TimeSpan.Zero);
        var command = new WorkflowCommand(_run.NextSeq, CommandKind.Timer, "timer") { FireAt = UtcNow + delay };
        return _run.Issue(command);
    }

    /// <summary>Waits for the next signal named <paramref name="name"/> (signals are kept until taken, in the order they came).</summary>
    /// <exception cref="JsonException">The payload does not deserialize as <typeparamref name="T"/>.</exception>
    /// <exception cref="OperationCanceledException">The workflow was cancelled first.</exception>
    public async Task<T> WaitForSignalAsync<T>(string name)
    {
        ArgumentNullException.ThrowIfNull(name);
        var payload = await _run.WaitForSignal(name);
        return JsonSerializer.Deserialize<T>(payload.Span, _run.Serializer)!;
    }

    /// <summary>
    /// Starts child workflow <paramref name="childId"/> of type <paramref name="type"/> (or joins it, if that id exists
    /// already) and returns its result.
    /// </summary>
    /// <exception cref="ChildWorkflowFailedException">The child failed, was cancelled or stopped, or its type is unknown.</exception>
    public async Task<TResult> CallChildAsync<TInput, TResult>(string type, string childId, TInput input)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(type);
        ArgumentException.ThrowIfNullOrWhiteSpace(childId);
        var command = new WorkflowCommand(_run.NextSeq, CommandKind.Child, type)
        {
            ChildId = childId,
            ChildInput = JsonSerializer.SerializeToUtf8Bytes(input, _run.Serializer),
        };
        var result = await _run.Issue(command);
        return JsonSerializer.Deserialize<TResult>(result.Span, _run.Serializer)!;
    }

    /// <summary>
    /// Which version of a code change this run takes. A run that had not reached this point when the change was deployed
    /// takes <paramref name="maxSupported"/> (recorded in its history); one that got past it before takes
    /// <see cref="DefaultVersion"/>. Branch on the answer to keep running instances on the code path they started on.
    /// </summary>
    /// <remarks>A run whose recorded version is outside [<paramref name="minSupported"/>, <paramref name="maxSupported"/>] stops with <see cref="WorkflowNonDeterminismException"/>.</remarks>
    public int GetVersion(string changeId, int minSupported, int maxSupported)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(changeId);
        ArgumentOutOfRangeException.ThrowIfLessThan(maxSupported, minSupported);
        return _run.GetVersion(changeId, minSupported, maxSupported);
    }

    /// <summary>
    /// Ends this run and starts a new run of the same workflow with <paramref name="input"/> and an empty history; use as
    /// <c>throw ctx.ContinueAsNew(input)</c>. Signals not yet taken move to the new run.
    /// </summary>
    public ContinueAsNewException ContinueAsNew<TInput>(TInput input) =>
        new(JsonSerializer.SerializeToUtf8Bytes(input, _run.Serializer));
}
