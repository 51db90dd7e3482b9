namespace Dse;

/// <summary>Thrown by a coordinator for a request it refuses (unknown participant, malformed or contradictory report).</summary>
public sealed class DseCoordinatorException : InvalidOperationException
{
    /// <summary>Creates the exception with a message naming what was wrong.</summary>
    public DseCoordinatorException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and the error that caused it.</summary>
    public DseCoordinatorException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
