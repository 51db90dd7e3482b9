namespace Dse.Workflows;

/// <summary>
/// Thrown by a step to fail at once, without further attempts: a business refusal ("the hotel is full"), as opposed to a
/// transient error.
/// </summary>
public sealed class StepRefusedException : Exception
{
    /// <summary>Creates the exception.</summary>
    public StepRefusedException(string message, Exception? innerException = null)
        : base(message, innerException)
    {
    }
}
