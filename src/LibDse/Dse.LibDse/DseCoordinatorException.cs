namespace Dse;

/// <summary>Thrown by a coordinator for a request it refuses (unknown participant, malformed or contradictory report).</summary>
public sealed class DseCoordinatorException : InvalidOperationException
{
    /// <summary>Creates the exception with a message naming what was wrong.</summary>
    public DseCoordinatorException(string message)
        : this(CoordinatorErrorCode.InvalidRequest, message)
    {
    }

    /// <summary>Creates the exception with a message and the error that caused it.</summary>
    public DseCoordinatorException(string message, Exception innerException)
        : this(CoordinatorErrorCode.InvalidRequest, message, innerException)
    {
    }

    /// <summary>Creates the exception with an error code and a message naming what was wrong.</summary>
    public DseCoordinatorException(CoordinatorErrorCode code, string message, Exception? innerException = null)
        : base(message, innerException)
    {
        Code = code;
    }

    /// <summary>Why the request was refused.</summary>
    public CoordinatorErrorCode Code { get; }
}
