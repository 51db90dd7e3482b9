namespace Dse.Darq;

/// <summary>How a lane's turn ended.</summary>
internal enum LaneOutcome
{
    /// <summary>Every message of the turn was acknowledged (or was no longer pending).</summary>
    Delivered,

    /// <summary>A message stayed pending (failure, unknown destination, not yet recoverable): the lane backs off.</summary>
    Failed,

    /// <summary>The destination refused a message for good and is parked.</summary>
    Parked,

    /// <summary>The DARQ closed during the turn.</summary>
    Stopped,

    /// <summary>
    /// A restore made an earlier message pending again during the turn, which held later ones: the turn ended so that
    /// the next, at once and without backoff, starts at the earliest.
    /// </summary>
    Reordered,
}
