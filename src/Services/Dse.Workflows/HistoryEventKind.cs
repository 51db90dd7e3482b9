namespace Dse.Workflows;

/// <summary>What a history event records. The numbers are stored; never reuse one.</summary>
public enum HistoryEventKind : byte
{
    /// <summary>A run began: <see cref="HistoryEvent.Name"/> is the workflow type, <see cref="HistoryEvent.Data"/> the input.</summary>
    WorkflowStarted = 1,

    /// <summary>Step <see cref="HistoryEvent.Seq"/> named <see cref="HistoryEvent.Name"/> is about to run (its intent).</summary>
    StepScheduled = 2,

    /// <summary>Step <see cref="HistoryEvent.Seq"/> returned <see cref="HistoryEvent.Data"/>.</summary>
    StepCompleted = 3,

    /// <summary>Step <see cref="HistoryEvent.Seq"/> failed for good: error type in <see cref="HistoryEvent.Name"/>, message in <see cref="HistoryEvent.Text"/>.</summary>
    StepFailed = 4,

    /// <summary>Timer <see cref="HistoryEvent.Seq"/> is set to fire at the UTC ticks in <see cref="HistoryEvent.Data"/>.</summary>
    TimerScheduled = 5,

    /// <summary>Timer <see cref="HistoryEvent.Seq"/> fired.</summary>
    TimerFired = 6,

    /// <summary>Signal <see cref="HistoryEvent.Name"/> arrived with the payload <see cref="HistoryEvent.Data"/>.</summary>
    SignalReceived = 7,

    /// <summary>Someone asked the workflow to cancel.</summary>
    CancelRequested = 8,

    /// <summary>The run took version <see cref="HistoryEvent.Seq"/> of change <see cref="HistoryEvent.Name"/> (<c>GetVersion</c>).</summary>
    VersionMarker = 9,

    /// <summary>Child workflow of type <see cref="HistoryEvent.Name"/> and id <see cref="HistoryEvent.Text"/> was started as command <see cref="HistoryEvent.Seq"/>.</summary>
    ChildScheduled = 10,

    /// <summary>The child of command <see cref="HistoryEvent.Seq"/> completed with <see cref="HistoryEvent.Data"/>.</summary>
    ChildCompleted = 11,

    /// <summary>The child of command <see cref="HistoryEvent.Seq"/> failed or was cancelled: error type in <see cref="HistoryEvent.Name"/>, message in <see cref="HistoryEvent.Text"/>.</summary>
    ChildFailed = 12,

    /// <summary>The run completed with the result <see cref="HistoryEvent.Data"/>.</summary>
    WorkflowCompleted = 13,

    /// <summary>The run failed: error type in <see cref="HistoryEvent.Name"/>, message in <see cref="HistoryEvent.Text"/>.</summary>
    WorkflowFailed = 14,

    /// <summary>The run ended cancelled.</summary>
    WorkflowCancelled = 15,

    /// <summary>The run ended and a new run of the same workflow starts with the input <see cref="HistoryEvent.Data"/>.</summary>
    ContinuedAsNew = 16,
}
