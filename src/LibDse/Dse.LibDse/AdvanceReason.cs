namespace Dse;

/// <summary>Why a StateObject advances its version; it decides when the advance may be skipped.</summary>
internal enum AdvanceReason
{
    /// <summary>Asked for (<see cref="StateObject.AdvanceVersionAsync"/>): always persists.</summary>
    Explicit,

    /// <summary>The group commit: skipped when nothing changed or the store cannot persist now.</summary>
    Periodic,

    /// <summary>A message from a higher version: the receiver moves up to it first.</summary>
    CommitOrdering,

    /// <summary>A reported version elsewhere depends on a version of this object beyond what it persisted.</summary>
    Wanted,
}
