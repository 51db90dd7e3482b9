namespace Dse.Darq;

/// <summary>A step failed validation (a consumed message is unknown, already consumed or not steppable); nothing of it was applied.</summary>
public sealed class DarqStepRejectedException : InvalidOperationException
{
    /// <summary>Creates the exception for the LSN that failed validation.</summary>
    /// <param name="darqName">The DARQ's name.</param>
    /// <param name="lsn">The offending LSN.</param>
    /// <param name="reason">Why it was refused.</param>
    public DarqStepRejectedException(string darqName, long lsn, DarqStepRejection reason)
        : base($"DARQ '{darqName}' refused the step: LSN {lsn} {Describe(reason)}. Nothing of the step was applied.")
    {
        Lsn = lsn;
        Reason = reason;
    }

    /// <summary>The consumed LSN that failed validation.</summary>
    public long Lsn { get; }

    /// <summary>Why the step was refused.</summary>
    public DarqStepRejection Reason { get; }

    private static string Describe(DarqStepRejection reason) => reason switch
    {
        DarqStepRejection.AlreadyConsumed => "was already consumed by an earlier step",
        DarqStepRejection.UnknownMessage => "is not the address of a message in this DARQ",
        DarqStepRejection.NotSteppable => "is an OUT message, which cannot be consumed by a step",
        DarqStepRejection.NotReplaceable => "is not a SELF message a checkpoint can replace (IN messages, activities and OUT messages are not)",
        _ => "is consumed twice in the same step",
    };
}
