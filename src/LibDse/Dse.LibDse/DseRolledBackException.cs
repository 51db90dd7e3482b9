namespace Dse;

/// <summary>
/// Thrown by an sthread whose observed state was rolled back by a failure: everything it derived must be discarded,
/// because the state it came from no longer exists.
/// </summary>
public sealed class DseRolledBackException : Exception
{
    /// <summary>Creates the exception for a rollback to world-line <paramref name="worldLine"/>.</summary>
    public DseRolledBackException(long worldLine, Dependency lost)
        : base($"The sthread was rolled back: it observed version {lost.Version} of StateObject {lost.ObjectId}, which world-line {worldLine} rolled back.")
    {
        WorldLine = worldLine;
        LostDependency = lost;
    }

    /// <summary>Creates the exception with a custom message.</summary>
    public DseRolledBackException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and the error that caused it.</summary>
    public DseRolledBackException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>The world-line whose rollback decision removed the observed state.</summary>
    public long WorldLine { get; }

    /// <summary>The observed version that did not survive.</summary>
    public Dependency LostDependency { get; }
}
