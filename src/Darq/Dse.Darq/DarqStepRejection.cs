namespace Dse.Darq;

/// <summary>Why a step was refused; a refused step changes nothing.</summary>
public enum DarqStepRejection
{
    /// <summary>A consumed LSN was already consumed by an earlier step (or truncated after being consumed).</summary>
    AlreadyConsumed = 1,

    /// <summary>A consumed LSN is not the address of any message in the log.</summary>
    UnknownMessage = 2,

    /// <summary>A consumed LSN is an OUT message, which is delivered, not stepped.</summary>
    NotSteppable = 3,

    /// <summary>The same LSN appears twice in one step.</summary>
    ConsumedTwiceInStep = 4,

    /// <summary>A checkpoint names an LSN that is not a plain SELF message (an IN message, an activity or an OUT message).</summary>
    NotReplaceable = 5,
}
