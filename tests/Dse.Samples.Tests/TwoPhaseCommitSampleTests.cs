using System.Net;
using Dse.Samples.TwoPhaseCommit;
using Xunit.Abstractions;

namespace Dse.Samples.Tests;

/// <summary>
/// The 2PC sample end to end: a real cluster of local processes (DSE coordinator, committer, four participants), closed-loop
/// clients, and the atomicity checks over what the participants' logs hold at the end.
/// </summary>
[Trait("Category", "MultiProcess")]
public class TwoPhaseCommitSampleTests(ITestOutputHelper output)
{
    [Fact]
    public async Task RunAsync_ShortRunInBothModes_EveryTransactionCommitsWithoutViolations()
    {
        var options = new TwoPhaseCommitOptions { Transactions = 100, Clients = 4 };

        var results = await TwoPhaseCommitRun.RunAsync(options, new TestOutputWriter(output));

        foreach (var mode in new[] { results.Speculative, results.NonSpeculative })
        {
            Assert.NotNull(mode);
            output.WriteLine(Describe(mode));
            Assert.Empty(mode.Violations);

            // No failure was injected: every transaction commits, and the checker saw each one (plus the warm-up).
            Assert.Equal(100, mode.Committed);
            Assert.Equal(0, mode.Aborted + mode.Failed);
            Assert.Equal(100, mode.CommitLatenciesMs.Count);
            Assert.True(mode.CheckedTransactions >= 100, $"the checker examined {mode.CheckedTransactions} transactions");
        }

        Assert.True(results.Passed);
        Assert.True(double.IsFinite(results.Ratio));
    }

    [Fact]
    public async Task RunAsync_BothModes_ReportsEachModeBeforeTheNextStarts()
    {
        var options = new TwoPhaseCommitOptions { Transactions = 20, WarmUpTransactions = 4, Clients = 2 };
        var writer = new TestOutputWriter(output);
        var reported = new List<ModeResults>();

        // As the launcher does: progress and each mode's result lines go to one writer, so their order is the user's.
        var results = await TwoPhaseCommitRun.RunAsync(options, writer, mode =>
        {
            reported.Add(mode);
            TwoPhaseCommitReport.WriteMode(writer, mode);
        });

        Assert.Equal(2, reported.Count);
        Assert.Same(results.Speculative, reported[0]);
        Assert.Same(results.NonSpeculative, reported[1]);
        var lines = writer.Lines;
        int speculativeResult = IndexOf(lines, "speculative    : commit latency mean");
        int speculativeAtomicity = IndexOf(lines, "                 atomicity:");
        int nonSpeculativeStart = IndexOf(lines, "non-speculative: starting the cluster");
        int nonSpeculativeResult = IndexOf(lines, "non-speculative: commit latency mean");
        Assert.True(speculativeResult >= 0 && speculativeAtomicity == speculativeResult + 1, $"the speculative result lines are at {speculativeResult} and {speculativeAtomicity}");
        Assert.True(speculativeAtomicity < nonSpeculativeStart, $"the speculative result (line {speculativeResult}) came after the non-speculative run started (line {nonSpeculativeStart})");
        Assert.True(nonSpeculativeStart < nonSpeculativeResult, $"the non-speculative result is at line {nonSpeculativeResult}");
    }

    [Fact]
    [Trait("Category", "Security")]
    public async Task RunAsync_ForgedHeadersMidRun_RefusedAndTheRunCommitsEverythingWithoutViolations()
    {
        var options = new TwoPhaseCommitOptions { Transactions = 200, Clients = 4, Mode = TwoPhaseCommitMode.Speculative, Forge = true };

        var results = await TwoPhaseCommitRun.RunAsync(options, new TestOutputWriter(output));

        var run = results.Speculative;
        Assert.NotNull(run);
        output.WriteLine(Describe(run));
        foreach (var forged in run.ForgedHeaders)
        {
            output.WriteLine($"{forged.Kind} -> participant-{forged.Participant}: {forged.Actual} (expected {forged.Expected})");
        }

        // Every participant got every kind; each implausible one was refused and the plausible one accepted.
        Assert.Equal(ForgedHeaders.Kinds.Count * 4, run.ForgedHeaders.Count);
        Assert.All(run.ForgedHeaders, f => Assert.True(f.AsExpected, $"{f.Kind} to participant-{f.Participant}: {f.Actual}, expected {f.Expected}"));

        // Refusals cost nothing: every transaction committed and the atomicity checks pass.
        Assert.Empty(run.Violations);
        Assert.Equal(200, run.Committed);
        Assert.Equal(0, run.Aborted + run.Failed);
        Assert.True(results.Passed);
    }

    [Fact]
    public async Task RunAsync_ParticipantKilledMidRun_AtomicityHoldsAndCommitsResumeAfterRestart()
    {
        const int Seed = 20240607;
        var options = new TwoPhaseCommitOptions { Transactions = 300, Clients = 4, Mode = TwoPhaseCommitMode.Speculative, Chaos = true, Seed = Seed };
        output.WriteLine($"seed {Seed}; replay: dotnet run -c Release --project samples/TwoPhaseCommit -- --transactions 300 --clients 4 --mode spec --chaos --seed {Seed}");

        var results = await TwoPhaseCommitRun.RunAsync(options, new TestOutputWriter(output));

        var run = results.Speculative;
        Assert.NotNull(run);
        output.WriteLine(Describe(run));
        foreach (string violation in run.Violations)
        {
            output.WriteLine($"VIOLATION: {violation}");
        }

        Assert.Equal(1, run.Kills);
        Assert.Empty(run.Violations);
        Assert.Equal(300, run.Committed + run.Aborted + run.Failed);
        Assert.True(run.CommittedAfterRestart > 0, $"no transaction that began after the restart committed (committed {run.Committed}, aborted {run.Aborted}, failed {run.Failed})");
    }

    [Fact]
    [Trait("Category", "Security")]
    public async Task RunAsync_Tls_EveryProcessServesTlsFromAThrowawayCaAndEveryTransactionCommits()
    {
        string directory = Directory.CreateTempSubdirectory("dse-2pc-tls-test-").FullName;
        try
        {
            var options = new TwoPhaseCommitOptions { Transactions = 100, Clients = 4, Mode = TwoPhaseCommitMode.Speculative, Tls = true, DataDirectory = directory };

            var results = await TwoPhaseCommitRun.RunAsync(options, new TestOutputWriter(output));

            var run = results.Speculative;
            Assert.NotNull(run);
            output.WriteLine(Describe(run));
            Assert.Empty(run.Violations);
            Assert.Equal(100, run.Committed);
            Assert.True(results.Passed);

            // The run made its CA, and no process served plaintext (each would have logged warning 5010 to its stderr file).
            Assert.NotEmpty(Directory.GetFiles(directory, "ca.pem", SearchOption.AllDirectories));
            string[] logs = Directory.GetFiles(directory, "*.stderr", SearchOption.AllDirectories);
            Assert.True(logs.Length >= 6, $"expected a stderr file per process, found {logs.Length}");
            foreach (string log in logs)
            {
                Assert.DoesNotContain("plaintext is for loopback development only", File.ReadAllText(log), StringComparison.Ordinal);
            }
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }
    }

    [Fact]
    public async Task Scrape_ClusterAfterTransactions_EveryServerServesItsMetricsAndLogsItsAddress()
    {
        string directory = Directory.CreateTempSubdirectory("dse-2pc-metrics-test-").FullName;
        try
        {
            Uri committerAddress;
            await using (var cluster = await LocalCluster.StartAsync(directory, speculative: true, TimeSpan.FromMilliseconds(10)))
            {
                committerAddress = cluster.CommitterAddress;
                using (var load = new LoadGenerator(cluster))
                {
                    var outcome = await load.RunAsync(1, 5, 1, null, CancellationToken.None);
                    Assert.Equal(5, outcome.Committed.Count);
                }

                // Each reply waited for a commit, applied before the next transaction's: the committer timed its lag.
                string committer = await ScrapeAsync(cluster.CommitterAddress);
                Assert.Matches(@"(?m)^dse_versions_persisted_total(\{[^}]*\})? [1-9]", committer);
                Assert.Matches(@"(?m)^dse_commit_lag_milliseconds_count\{[^}]*dse_object=""1""[^}]*\} [1-9]", committer);
                Assert.Matches(@"(?m)^dse_versions_persisted_total(\{[^}]*\})? [1-9]", await ScrapeAsync(cluster.ParticipantAddresses[0]));
                Assert.Matches(@"(?m)^dse_coordinator_reports_total(\{[^}]*\})? [1-9]", await ScrapeAsync(cluster.CoordinatorAddress));
            }

            // Where the README sends a user for the port: the process's standard error file, complete once it ended.
            string log = Assert.Single(Directory.GetFiles(Path.Combine(directory, "logs"), "committer.*.stderr"));
            Assert.Contains($"listening on {committerAddress.ToString().TrimEnd('/')}", File.ReadAllText(log), StringComparison.Ordinal);
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }
    }

    /// <summary>GET /metrics over HTTP/2 with prior knowledge: a plaintext gRPC port speaks nothing else.</summary>
    private async Task<string> ScrapeAsync(Uri server)
    {
        using var http = new HttpClient();
        using var request = new HttpRequestMessage(HttpMethod.Get, new Uri(server, "/metrics"))
        {
            Version = HttpVersion.Version20,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };
        using var response = await http.SendAsync(request);
        string text = await response.Content.ReadAsStringAsync();
        output.WriteLine($"GET {request.RequestUri}: {(int)response.StatusCode}, {text.Length} characters");
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        return text;
    }

    private static int IndexOf(IReadOnlyList<string> lines, string prefix)
    {
        for (int i = 0; i < lines.Count; i++)
        {
            if (lines[i].StartsWith(prefix, StringComparison.Ordinal))
            {
                return i;
            }
        }

        return -1;
    }

    private static string Describe(ModeResults mode) =>
        $"{(mode.Speculative ? "speculative" : "non-speculative")}: committed {mode.Committed}, aborted {mode.Aborted}, failed {mode.Failed}, " +
        $"mean {mode.MeanMs:F1} ms, p99 {mode.P99Ms:F1} ms in {mode.Elapsed.TotalSeconds:F1} s; kills {mode.Kills}, committed after restart {mode.CommittedAfterRestart}, checked {mode.CheckedTransactions}";
}
