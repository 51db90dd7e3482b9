using Dse.Samples.TwoPhaseCommit;

namespace Dse.Samples.Tests;

/// <summary>The 2PC sample's result lines: per mode (latency, atomicity, why not committed, violations), then the comparison.</summary>
public class TwoPhaseCommitReportTests
{
    [Fact]
    public void WriteMode_CleanRun_LatencyThenAtomicityLine()
    {
        var writer = new StringWriter();

        TwoPhaseCommitReport.WriteMode(writer, Mode(speculative: true, latencies: [10, 20, 30]));

        var lines = Lines(writer);
        Assert.Equal(2, lines.Length);
        Assert.StartsWith("speculative    : commit latency mean 20.00 ms, p50 20.00 ms, p99 30.00 ms; committed 3, aborted 0, failed 0 in 2.0 s (2 commits/s)", lines[0], StringComparison.Ordinal);
        Assert.Equal("                 atomicity: 3 transactions checked at 4 participants; kills 0, committed after the restart -, violations 0", lines[1]);
    }

    [Fact]
    public void WriteMode_FailuresAndViolations_ReasonsAndEachViolation()
    {
        var writer = new StringWriter();
        var mode = Mode(speculative: false, latencies: [5], reasons: new() { ["commit: Unavailable"] = 2, ["a participant voted no"] = 5 }, violations: ["T7 committed at participant-0 and aborted at participant-1"], kills: 1);

        TwoPhaseCommitReport.WriteMode(writer, mode);

        var lines = Lines(writer);
        Assert.Equal(4, lines.Length);
        Assert.StartsWith("non-speculative: commit latency mean 5.00 ms", lines[0], StringComparison.Ordinal);
        Assert.Contains("kills 1, committed after the restart 0, violations 1", lines[1], StringComparison.Ordinal);
        Assert.Equal("                 not committed: a participant voted no x5, commit: Unavailable x2", lines[2]);
        Assert.Equal("  VIOLATION: T7 committed at participant-0 and aborted at participant-1", lines[3]);
    }

    [Fact]
    public void WriteComparison_BothModes_RatioAndSaving()
    {
        var writer = new StringWriter();
        var results = new TwoPhaseCommitResults { Options = new(), Seed = 1, Speculative = Mode(true, [20]), NonSpeculative = Mode(false, [80]) };

        TwoPhaseCommitReport.WriteComparison(writer, results);

        Assert.Equal(["speculative / non-speculative mean commit latency: 0.25 (saves 60.00 ms per transaction)"], Lines(writer));
    }

    [Fact]
    public void WriteComparison_OneMode_WritesNothing()
    {
        var writer = new StringWriter();
        var results = new TwoPhaseCommitResults { Options = new(), Seed = 1, Speculative = Mode(true, [20]) };

        TwoPhaseCommitReport.WriteComparison(writer, results);

        Assert.Empty(writer.ToString());
    }

    private static string[] Lines(StringWriter writer) => writer.ToString().Split(Environment.NewLine, StringSplitOptions.RemoveEmptyEntries);

    private static ModeResults Mode(bool speculative, double[] latencies, Dictionary<string, int>? reasons = null, string[]? violations = null, int kills = 0) => new()
    {
        Speculative = speculative,
        CommitLatenciesMs = latencies,
        Committed = latencies.Length,
        Aborted = 0,
        Failed = 0,
        NotCommittedReasons = reasons ?? [],
        Kills = kills,
        CommittedAfterRestart = 0,
        Violations = violations ?? [],
        CheckedTransactions = latencies.Length,
        Elapsed = TimeSpan.FromSeconds(2),
    };
}
