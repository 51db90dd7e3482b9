namespace Dse.Workflows;

/// <summary>The engine is not serving right now: not started yet, reloading its history after a rollback, or disposed. Nothing was recorded; retry.</summary>
public sealed class WorkflowEngineUnavailableException : InvalidOperationException
{
    /// <summary>Creates the exception.</summary>
    public WorkflowEngineUnavailableException(string message, Exception? innerException = null)
        : base(message, innerException)
    {

    }
}
