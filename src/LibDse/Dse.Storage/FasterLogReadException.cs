namespace Dse.Storage;

/// <summary>FasterLog could not read the record at <see cref="Address"/>: a failed storage read, or a record header it cannot parse.</summary>
public sealed class FasterLogReadException : IOException
{
    /// <summary>Creates the exception for the record at <paramref name="address"/>.</summary>
    /// <param name="address">The record's address.</param>
    /// <param name="innerException">What FasterLog threw.</param>
    public FasterLogReadException(long address, Exception innerException)
        : base($"FasterLog cannot read the record at address {address}: {innerException?.Message}", innerException)
    {
        Address = address;
    }

    /// <summary>Creates the exception with a message.</summary>
    /// <param name="message">What could not be read.</param>
    public FasterLogReadException(string message)
        : base(message)
    {
        Address = -1;
    }

    /// <summary>Creates the exception with a message and the failure it comes from.</summary>
    /// <param name="message">What could not be read.</param>
    /// <param name="innerException">What FasterLog threw.</param>
    public FasterLogReadException(string message, Exception innerException)
        : base(message, innerException)
    {
        Address = -1;
    }

    /// <summary>Creates the exception with no message.</summary>
    public FasterLogReadException()
    {
        Address = -1;
    }

    /// <summary>The address FasterLog could not read; -1 when unknown.</summary>
    public long Address { get; }
}
