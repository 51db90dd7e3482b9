namespace Dse.Workflows;

/// <summary>What workflow code sees when a step failed for good (its attempts are used up, or its error is not retryable). The step's own exception is not kept across a replay, only its type name and message.</summary>
public sealed class StepFailedException : Exception
{
    /// <summary>Creates the exception.</summary>
    public StepFailedException(string stepName, int stepIndex, string errorType, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        StepName = stepName;
        StepIndex = stepIndex;
        ErrorType = errorType;
    }

    /// <summary>The step's name.</summary>
    public string StepName { get; }

    /// <summary>The step's command number in its run.</summary>
    public int StepIndex { get; }

    /// <summary>The full type name of the step's last exception.</summary>
    public string ErrorType { get; }
}
