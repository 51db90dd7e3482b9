namespace Dse.Samples.TwoPhaseCommit;

/// <summary>What a 2PC log record says; the first byte of every entry the sample appends.</summary>
internal enum RecordKind : byte
{
    /// <summary>A participant saw the transaction start (written by the client's call, speculatively).</summary>
    Start = 1,

    /// <summary>The committer began committing the transaction.</summary>
    CommitStart = 2,

    /// <summary>A participant's vote; the value is 1 for yes, 0 for no.</summary>
    Vote = 3,

    /// <summary>A decision; the value is 1 for commit, 0 for abort.</summary>
    Decision = 4,
}
