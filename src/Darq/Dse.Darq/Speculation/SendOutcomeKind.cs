namespace Dse.Darq;

/// <summary>The kinds of <see cref="SendOutcome"/>.</summary>
internal enum SendOutcomeKind
{
    /// <summary>Appended at the destination.</summary>
    Sent,

    /// <summary>No longer pending: nothing to send.</summary>
    Skipped,

    /// <summary>Not recoverable yet: tried again later.</summary>
    Held,

    /// <summary>An earlier message became pending again: it leaves first.</summary>
    Reordered,
}
