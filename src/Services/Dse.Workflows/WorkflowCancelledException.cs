namespace Dse.Workflows;

/// <summary>What a client sees when the workflow it waits for ended cancelled.</summary>
public sealed class WorkflowCancelledException : OperationCanceledException
{
    /// <summary>Creates the exception.</summary>
    public WorkflowCancelledException(string workflowId, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        WorkflowId = workflowId;
    }

    /// <summary>The workflow.</summary>
    public string WorkflowId { get; }
}
