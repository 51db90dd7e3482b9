namespace Dse;

/// <summary>
/// Thrown when a StateObject can no longer make progress safely (for example a Persist failed): the fail-restart model
/// applies, so the owner must dispose it and start a new instance on the same storage.
/// </summary>
public sealed class DseFaultedException : InvalidOperationException
{
    /// <summary>Creates the exception with a message naming the cause.</summary>
    public DseFaultedException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and the error that caused the fault.</summary>
    public DseFaultedException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
