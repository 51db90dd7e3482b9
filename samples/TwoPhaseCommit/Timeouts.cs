namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// The deadlines that keep every call bounded while a participant is down (no client or committer hangs). They are
/// absolute from the moment a call is made, so in non-speculative mode they include the wait for the commit of the
/// state a call carries: generous, because a loaded machine stretches commit rounds to seconds.
/// </summary>
internal static class Timeouts
{
    /// <summary>A client's start-record call.</summary>
    public static readonly TimeSpan Begin = TimeSpan.FromSeconds(10);

    /// <summary>A client's commit call: longer than the committer's prepare and decide phases together.</summary>
    public static readonly TimeSpan Commit = TimeSpan.FromSeconds(60);

    /// <summary>One prepare call; a participant that does not answer in time votes no.</summary>
    public static readonly TimeSpan Prepare = TimeSpan.FromSeconds(10);

    /// <summary>How long the committer keeps retrying a decision to a participant before the commit call fails.</summary>
    public static readonly TimeSpan Decide = TimeSpan.FromSeconds(20);

    /// <summary>One decide attempt.</summary>
    public static readonly TimeSpan DecideAttempt = TimeSpan.FromSeconds(5);
}
