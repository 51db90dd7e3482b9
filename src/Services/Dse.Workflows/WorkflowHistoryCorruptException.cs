namespace Dse.Workflows;

/// <summary>A workflow's history cannot be read back (an event fails its checksum or is missing); that workflow stops, the others go on.</summary>
public sealed class WorkflowHistoryCorruptException : Exception
{
    /// <summary>Creates the exception; the message says what is wrong and where.</summary>
    public WorkflowHistoryCorruptException(string workflowId, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        WorkflowId = workflowId;
    }

    /// <summary>The workflow whose history is damaged.</summary>
    public string WorkflowId { get; }
}
