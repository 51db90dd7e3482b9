namespace Dse.Workflows;

/// <summary>A signal or cancellation for a workflow that has already ended or stopped; nothing was recorded.</summary>
public sealed class WorkflowNotRunningException : InvalidOperationException
{
    /// <summary>Creates the exception.</summary>
    public WorkflowNotRunningException(string workflowId, WorkflowStatus status, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        WorkflowId = workflowId;
        Status = status;
    }

    /// <summary>The workflow.</summary>
    public string WorkflowId { get; }

    /// <summary>Its status.</summary>
    public WorkflowStatus Status { get; }
}
