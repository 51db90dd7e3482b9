namespace Dse.Workflows;

/// <summary>Where a workflow instance stands.</summary>
public enum WorkflowStatus
{
    /// <summary>Its current run has no outcome yet.</summary>
    Running,

    /// <summary>It returned a result.</summary>
    Completed,

    /// <summary>It ended with an exception.</summary>
    Failed,

    /// <summary>It ended cancelled.</summary>
    Cancelled,

    /// <summary>The engine stopped it: its replay diverged from its history, or its history is damaged. Nothing was recorded; an engine restart with fixed code retries it.</summary>
    Stopped,
}
