using Dse.Samples.Shared;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>What one run (one mode, one fresh cluster) measured and checked.</summary>
public sealed class ModeResults
{
    /// <summary>Whether the cluster ran speculatively.</summary>
    public required bool Speculative { get; init; }

    /// <summary>The commit latency (ms) of every transaction acknowledged as committed, in completion order.</summary>
    public required IReadOnlyList<double> CommitLatenciesMs { get; init; }

    /// <summary>Transactions acknowledged to their client as committed.</summary>
    public required int Committed { get; init; }

    /// <summary>Transactions that ended aborted: a participant voted no, or a call was rolled back (ABORTED).</summary>
    public required int Aborted { get; init; }

    /// <summary>Transactions whose calls failed otherwise (a participant down, a deadline): outcome unknown to the client.</summary>
    public required int Failed { get; init; }

    /// <summary>Why transactions were not committed (the step and the gRPC status, or a no vote), with how many each.</summary>
    public required IReadOnlyDictionary<string, int> NotCommittedReasons { get; init; }

    /// <summary>Participants killed and restarted during the run.</summary>
    public required int Kills { get; init; }

    /// <summary>Transactions that started after the restarted participant served again and were committed.</summary>
    public required int CommittedAfterRestart { get; init; }

    /// <summary>The atomicity checker's findings; empty when every check passed.</summary>
    public required IReadOnlyList<string> Violations { get; init; }

    /// <summary>Transactions the checker examined (those with any record at any participant).</summary>
    public required int CheckedTransactions { get; init; }

    /// <summary>What the participants answered to forged headers (<see cref="TwoPhaseCommitOptions.Forge"/>); empty without.</summary>
    public IReadOnlyList<ForgedHeaderOutcome> ForgedHeaders { get; init; } = [];

    /// <summary>Wall-clock time of the measured load.</summary>
    public required TimeSpan Elapsed { get; init; }

    /// <summary>Mean commit latency (ms); NaN without committed transactions.</summary>
    public double MeanMs => LatencyStats.Mean(CommitLatenciesMs);

    /// <summary>Median commit latency (ms).</summary>
    public double P50Ms => LatencyStats.Percentile(CommitLatenciesMs, 0.50);

    /// <summary>99th percentile of commit latency (ms).</summary>
    public double P99Ms => LatencyStats.Percentile(CommitLatenciesMs, 0.99);
}
