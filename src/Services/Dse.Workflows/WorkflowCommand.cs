namespace Dse.Workflows;

/// <summary>
/// Something workflow code asked for and awaits: a step, a timer or a child workflow, numbered in the order the code asked
/// (<see cref="Seq"/>). Its outcome comes from the history: replayed, or appended by its executor when it finishes.
/// </summary>
internal sealed class WorkflowCommand
{
    /// <summary>Creates a command.</summary>
    public WorkflowCommand(int seq, CommandKind kind, string name)
    {
        Seq = seq;
        Kind = kind;
        Name = name;
    }

    /// <summary>Its number in the run.</summary>
    public int Seq { get; }

    /// <summary>What it does.</summary>
    public CommandKind Kind { get; }

    /// <summary>The step's name, or the child's workflow type; <c>timer</c> for timers.</summary>
    public string Name { get; }

    /// <summary>Completed (on the workflow's context) with the serialized outcome.</summary>
    public TaskCompletionSource<ReadOnlyMemory<byte>> Completion { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>The step's code, serializing its result.</summary>
    public Func<StepContext, CancellationToken, Task<byte[]>>? Step { get; init; }

    /// <summary>The step's attempt options.</summary>
    public StepOptions? StepOptions { get; init; }

    /// <summary>When a timer fires.</summary>
    public DateTimeOffset FireAt { get; init; }

    /// <summary>The child's workflow id.</summary>
    public string? ChildId { get; init; }

    /// <summary>The child's serialized input.</summary>
    public ReadOnlyMemory<byte> ChildInput { get; init; }

    /// <summary>Whether an executor runs it (set by the run's loop only).</summary>
    public bool Started { get; set; }

    /// <summary>The kind of history event that records this command's intent.</summary>
    public HistoryEventKind ScheduledKind => Kind switch
    {
        CommandKind.Step => HistoryEventKind.StepScheduled,
        CommandKind.Timer => HistoryEventKind.TimerScheduled,
        _ => HistoryEventKind.ChildScheduled,
    };

    /// <summary>A short description for messages.</summary>
    public override string ToString() => Kind switch
    {
        CommandKind.Step => $"step {Seq} '{Name}'",
        CommandKind.Timer => $"timer {Seq}",
        _ => $"child workflow {Seq} '{Name}' ({ChildId})",
    };
}
