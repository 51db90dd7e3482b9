namespace Dse.Workflows;

/// <summary>No workflow with this id was ever started (or its history was truncated away).</summary>
public sealed class WorkflowNotFoundException : KeyNotFoundException
{
    /// <summary>Creates the exception.</summary>
    public WorkflowNotFoundException(string workflowId, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        WorkflowId = workflowId;
    }

    /// <summary>The id asked for.</summary>
    public string WorkflowId { get; }
}
