namespace Dse.Workflows;

/// <summary>What a client sees when the workflow it waits for failed.</summary>
public sealed class WorkflowFailedException : Exception
{
    /// <summary>Creates the exception.</summary>
    public WorkflowFailedException(string workflowId, string errorType, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        WorkflowId = workflowId;
        ErrorType = errorType;
    }

    /// <summary>The workflow.</summary>
    public string WorkflowId { get; }

    /// <summary>The full type name of the exception the workflow ended with.</summary>
    public string ErrorType { get; }
}
