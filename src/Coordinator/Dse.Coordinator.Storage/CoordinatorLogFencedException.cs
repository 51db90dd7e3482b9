namespace Dse.Coordinator;

/// <summary>
/// Another coordinator incarnation holds or took over the coordinator log; this instance must stop acting as the
/// coordinator. Thrown by <see cref="ICoordinatorLog.OpenAsync"/> when the log cannot be taken, and by
/// <see cref="ICoordinatorLog.AppendAsync"/> (for this and every later append) once a newer incarnation fenced this one.
/// </summary>
public sealed class CoordinatorLogFencedException : Exception
{
    /// <summary>Creates the exception with a generic message.</summary>
    public CoordinatorLogFencedException()
        : base("The coordinator log is held by another coordinator incarnation.")
    {
    }

    /// <summary>Creates the exception with a message that names the log and what happened.</summary>
    public CoordinatorLogFencedException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and the storage error that revealed the fencing.</summary>
    public CoordinatorLogFencedException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
