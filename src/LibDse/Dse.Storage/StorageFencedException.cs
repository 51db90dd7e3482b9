namespace Dse.Storage;

/// <summary>
/// Another instance owns the storage: opening it was refused (a local lock file is held), or this instance was fenced
/// after another one took the storage over (its page blob lease was broken), and its writes are refused.
/// </summary>
public sealed class StorageFencedException : IOException
{
    /// <summary>Creates the exception with a message.</summary>
    /// <param name="message">What was refused, naming the storage.</param>
    public StorageFencedException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and the failure it comes from.</summary>
    /// <param name="message">What was refused, naming the storage.</param>
    /// <param name="innerException">The lock or lease failure.</param>
    public StorageFencedException(string message, Exception innerException)
        : base(message, innerException)
    {
    }

    /// <summary>Creates the exception with no message.</summary>
    public StorageFencedException()
    {
    }
}
