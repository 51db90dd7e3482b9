namespace Dse.Workflows;

/// <summary>
/// One entry of a workflow run's history. Every run's events are numbered from 0 without gaps (<see cref="Index"/>), so a
/// lost or unreadable event shows as a gap when the history is read back.
/// </summary>
/// <param name="WorkflowId">The workflow instance the event belongs to.</param>
/// <param name="Run">The run of the instance (1, then one more after each continue-as-new).</param>
/// <param name="Index">The event's position in its run's history.</param>
/// <param name="Kind">What the event records.</param>
/// <param name="Timestamp">When the engine appended it: the workflow's clock (<see cref="WorkflowContext.UtcNow"/>) reads it.</param>
/// <param name="Seq">The command number for commands and their outcomes (steps, timers, children), the version of a version marker; 0 otherwise.</param>
/// <param name="Name">A name, by kind (workflow type, step name, signal name, error type, change id).</param>
/// <param name="Text">A second text, by kind (error message, child id).</param>
/// <param name="Data">The payload, by kind (input, result, signal payload, timer deadline).</param>
public sealed record HistoryEvent(
    string WorkflowId,
    int Run,
    int Index,
    HistoryEventKind Kind,
    DateTimeOffset Timestamp,
    int Seq,
    string? Name,
    string? Text,
    ReadOnlyMemory<byte> Data)
{
    /// <summary>Whether the event ends its run.</summary>
    public bool IsTerminal => Kind is HistoryEventKind.WorkflowCompleted or HistoryEventKind.WorkflowFailed
        or HistoryEventKind.WorkflowCancelled or HistoryEventKind.ContinuedAsNew;

    /// <summary>Whether the event records a command's intent (its outcome follows later).</summary>
    public bool IsCommand => Kind is HistoryEventKind.StepScheduled or HistoryEventKind.TimerScheduled or HistoryEventKind.ChildScheduled;

    /// <summary>Whether the event records a command's outcome.</summary>
    public bool IsCommandOutcome => Kind is HistoryEventKind.StepCompleted or HistoryEventKind.StepFailed
        or HistoryEventKind.TimerFired or HistoryEventKind.ChildCompleted or HistoryEventKind.ChildFailed;
}
