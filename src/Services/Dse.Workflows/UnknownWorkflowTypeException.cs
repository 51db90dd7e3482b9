namespace Dse.Workflows;

/// <summary>A start named a workflow type nobody registered; nothing was recorded.</summary>
public sealed class UnknownWorkflowTypeException : ArgumentException
{
    /// <summary>Creates the exception for <paramref name="workflowType"/>.</summary>
    public UnknownWorkflowTypeException(string workflowType)
        : base($"No workflow type '{workflowType}' is registered.")
    {
        WorkflowType = workflowType;
    }

    /// <summary>The type asked for.</summary>
    public string WorkflowType { get; }
}
