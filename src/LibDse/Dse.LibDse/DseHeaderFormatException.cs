namespace Dse;

/// <summary>Thrown when bytes that should hold a DSE header or version metadata are malformed or truncated.</summary>
public class DseHeaderFormatException : FormatException
{
    /// <summary>Creates the exception with a message naming what was wrong.</summary>
    public DseHeaderFormatException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and the error that caused it.</summary>
    public DseHeaderFormatException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
