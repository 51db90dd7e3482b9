namespace Dse.Samples.TwoPhaseCommit;

/// <summary>Which runs <see cref="TwoPhaseCommitRun"/> performs.</summary>
public enum TwoPhaseCommitMode
{
    /// <summary>Both: a speculative cluster, then a fresh non-speculative one (the baseline).</summary>
    Both,

    /// <summary>Only the speculative run.</summary>
    Speculative,

    /// <summary>Only the non-speculative baseline.</summary>
    NonSpeculative,
}
