namespace Dse.Darq;

/// <summary>A request carried an incarnation that is not the DARQ's current processor incarnation; the processor should stop.</summary>
public sealed class DarqStaleIncarnationException : InvalidOperationException
{
    /// <summary>Creates the exception.</summary>
    /// <param name="darqName">The DARQ's name.</param>
    /// <param name="incarnation">The incarnation the request carried.</param>
    /// <param name="currentIncarnation">The DARQ's current incarnation (0 when no processor is registered).</param>
    public DarqStaleIncarnationException(string darqName, long incarnation, long currentIncarnation)
        : base(incarnation < currentIncarnation
            ? $"DARQ '{darqName}' refused a request from processor incarnation {incarnation}: incarnation {currentIncarnation} has registered since. The old processor must stop."
            : $"DARQ '{darqName}' refused a request from processor incarnation {incarnation}: the current incarnation is {currentIncarnation}; register to obtain one.")
    {
        Incarnation = incarnation;
        CurrentIncarnation = currentIncarnation;
    }

    /// <summary>Creates the exception with the message the refusing side wrote (a remote DARQ says which instance it refused).</summary>
    /// <param name="darqName">The DARQ's name.</param>
    /// <param name="incarnation">The incarnation the request carried.</param>
    /// <param name="currentIncarnation">The DARQ's current incarnation (0 when no processor is registered).</param>
    /// <param name="message">What was refused and why.</param>
    public DarqStaleIncarnationException(string darqName, long incarnation, long currentIncarnation, string message)
        : base(string.IsNullOrWhiteSpace(message) ? new DarqStaleIncarnationException(darqName, incarnation, currentIncarnation).Message : message)
    {
        Incarnation = incarnation;
        CurrentIncarnation = currentIncarnation;
    }

    /// <summary>The incarnation the refused request carried.</summary>
    public long Incarnation { get; }

    /// <summary>The DARQ's current incarnation when the request was refused.</summary>
    public long CurrentIncarnation { get; }
}
