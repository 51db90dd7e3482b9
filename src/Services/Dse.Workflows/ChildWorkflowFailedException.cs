namespace Dse.Workflows;

/// <summary>What workflow code sees when a child workflow failed, was cancelled or stopped.</summary>
public sealed class ChildWorkflowFailedException : Exception
{
    /// <summary>Creates the exception.</summary>
    public ChildWorkflowFailedException(string childId, string errorType, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        ChildId = childId;
        ErrorType = errorType;
    }

    /// <summary>The child workflow's id.</summary>
    public string ChildId { get; }

    /// <summary>The child's error type (its exception's type name, or the outcome).</summary>
    public string ErrorType { get; }
}
