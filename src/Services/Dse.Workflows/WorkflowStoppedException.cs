namespace Dse.Workflows;

/// <summary>What a client sees when the workflow it waits for is stopped (its replay diverged or its history is damaged); it may resume after a fixed deployment restarts the engine.</summary>
public sealed class WorkflowStoppedException : Exception
{
    /// <summary>Creates the exception; the message carries the reason.</summary>
    public WorkflowStoppedException(string workflowId, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        WorkflowId = workflowId;
    }

    /// <summary>The workflow.</summary>
    public string WorkflowId { get; }
}
