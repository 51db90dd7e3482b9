namespace Dse.Workflows;

/// <summary>The workflow code did not do what its history says it did (a replay diverged); the run stops, nothing is appended, and other workflows go on.</summary>
public sealed class WorkflowNonDeterminismException : Exception
{
    /// <summary>Creates the exception; the message names the step.</summary>
    public WorkflowNonDeterminismException(string workflowId, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        WorkflowId = workflowId;
    }

    /// <summary>The workflow whose replay diverged.</summary>
    public string WorkflowId { get; }
}
