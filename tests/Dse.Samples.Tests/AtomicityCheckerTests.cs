using Dse.Samples.TwoPhaseCommit;
using Dse.Samples.TwoPhaseCommit.Wire;

namespace Dse.Samples.Tests;

/// <summary>The 2PC sample's atomicity checker finds each kind of violation (the chaos runs rely on it finding none).</summary>
public sealed class AtomicityCheckerTests
{
    private const int Participants = 4;

    [Fact]
    public void Check_EveryParticipantCommittedAfterYesVotes_NoViolation()
    {
        var logs = Logs(p => Outcome(1, vote: 1, commits: 1));
        Assert.Empty(AtomicityChecker.Check(logs, [1], out int examined));
        Assert.Equal(1, examined);
    }

    [Fact]
    public void Check_CommittedAtSomeAbortedAtOthers_IsReported()
    {
        var logs = Logs(p => p == 0 ? Outcome(1, vote: 1, aborts: 1) : Outcome(1, vote: 1, commits: 1));
        Assert.Contains(AtomicityChecker.Check(logs, [], out _), v => v.Contains("aborted at others", StringComparison.Ordinal));
    }

    [Fact]
    public void Check_CommitWithoutEveryYesVote_IsReported()
    {
        var logs = Logs(p => p == 3 ? Outcome(1, vote: 2, commits: 1) : Outcome(1, vote: 1, commits: 1));
        Assert.Contains(AtomicityChecker.Check(logs, [], out _), v => v.Contains("without a yes vote", StringComparison.Ordinal));
    }

    [Fact]
    public void Check_AcknowledgedCommitMissingAtAParticipant_IsReported()
    {
        var logs = Logs(p => p == 2 ? Outcome(1, vote: 1) : Outcome(1, vote: 1, commits: 1));
        Assert.Contains(AtomicityChecker.Check(logs, [1], out _), v => v.Contains("acknowledged to its client", StringComparison.Ordinal));
        Assert.Contains(AtomicityChecker.Check(Logs(_ => null), [7], out _), v => v.Contains("no records at all", StringComparison.Ordinal));
    }

    [Fact]
    public void Check_BothDecisionsAtOneParticipant_IsReported()
    {
        var logs = Logs(p => Outcome(1, vote: 1, commits: 1, aborts: p == 1 ? 1 : 0));
        Assert.Contains(AtomicityChecker.Check(logs, [], out _), v => v.Contains("both a commit and an abort", StringComparison.Ordinal));
    }

    private static TransactionOutcome Outcome(long transaction, int vote, int commits = 0, int aborts = 0) =>
        new() { Transaction = transaction, Started = true, Vote = vote, Commits = commits, Aborts = aborts };

    private static List<OutcomesReply> Logs(Func<int, TransactionOutcome?> outcomeAt)
    {
        var logs = new List<OutcomesReply>();
        for (int p = 0; p < Participants; p++)
        {
            var reply = new OutcomesReply();
            if (outcomeAt(p) is { } outcome)
            {
                reply.Transactions.Add(outcome);
            }

            logs.Add(reply);
        }

        return logs;
    }
}
