namespace Dse.Samples.TwoPhaseCommit;

/// <summary>How a transaction ended for its client.</summary>
internal enum TransactionResult
{
    /// <summary>The committer acknowledged it as committed.</summary>
    Committed,

    /// <summary>A participant voted no, or a call was rolled back (ABORTED).</summary>
    Aborted,

    /// <summary>A call failed otherwise (unavailable, deadline): the client does not know the outcome.</summary>
    Failed,
}
