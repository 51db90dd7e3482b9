using Dse.Samples.TwoPhaseCommit.Wire;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// Checks 2PC's guarantees on what the participants' logs hold once the cluster is quiet (recoverable records only):
/// every transaction has a single outcome, no transaction acknowledged as committed is lost, and no commit was
/// decided without a yes vote from every participant.
/// </summary>
internal static class AtomicityChecker
{
    private const int MaxReported = 20;

    /// <summary>
    /// Returns the violations (at most 20 described, then a count) in <paramref name="participants"/>' outcomes (one
    /// reply per participant) given the transactions acknowledged as committed; <paramref name="examined"/> is how many
    /// transactions had any record.
    /// </summary>
    public static List<string> Check(IReadOnlyList<OutcomesReply> participants, IEnumerable<long> acknowledgedCommitted, out int examined)
    {
        var byTransaction = new Dictionary<long, TransactionOutcome?[]>();
        for (int p = 0; p < participants.Count; p++)
        {
            foreach (var outcome in participants[p].Transactions)
            {
                if (!byTransaction.TryGetValue(outcome.Transaction, out var row))
                {
                    byTransaction[outcome.Transaction] = row = new TransactionOutcome?[participants.Count];
                }

                row[p] = outcome;
            }
        }

        examined = byTransaction.Count;
        var violations = new List<string>();
        int total = 0;
        void Report(string violation)
        {
            if (total++ < MaxReported)
            {
                violations.Add(violation);
            }
        }

        foreach (var (transaction, row) in byTransaction)
        {
            bool anyCommit = false;
            bool anyAbort = false;
            bool allVotedYes = true;
            for (int p = 0; p < row.Length; p++)
            {
                var o = row[p];
                if (o is { Commits: > 0, Aborts: > 0 })
                {
                    Report($"transaction {transaction}: participant {p} holds both a commit and an abort decision");
                }

                anyCommit |= o is { Commits: > 0 };
                anyAbort |= o is { Aborts: > 0 };
                allVotedYes &= o is { Vote: 1 };
            }

            if (anyCommit && anyAbort)
            {
                Report($"transaction {transaction}: committed at some participants, aborted at others ({Describe(row)})");
            }

            if (anyCommit && !allVotedYes)
            {
                Report($"transaction {transaction}: a commit decision survives without a yes vote from every participant ({Describe(row)})");
            }
        }

        foreach (long transaction in acknowledgedCommitted)
        {
            if (!byTransaction.TryGetValue(transaction, out var row) || Array.Exists(row, o => o is not { Commits: > 0 }))
            {
                Report($"transaction {transaction}: acknowledged to its client as committed, but not every participant holds its commit decision ({(row is null ? "no records at all" : Describe(row))})");
            }
        }

        if (total > MaxReported)
        {
            violations.Add($"... and {total - MaxReported} more violations");
        }

        return violations;
    }

    private static string Describe(TransactionOutcome?[] row) => string.Join("; ", row.Select((o, p) => o is null
        ? $"p{p}: nothing"
        : $"p{p}: start {(o.Started ? "yes" : "no")}, vote {o.Vote switch { 1 => "yes", 2 => "no", _ => "none" }}, commits {o.Commits}, aborts {o.Aborts}"));
}
