using Dse.Benchmarks.Harness;
using Dse.Samples.TwoPhaseCommit;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// The libDSE paper's 2PC experiment (Fig. 11) through the TwoPhaseCommit sample: a committer and four participants as
/// local gRPC processes on speculative logs, 8 closed-loop clients, 10 ms group commit; mean commit latency of the
/// speculative run over a fresh non-speculative one in the same run. Writes every transaction's commit latency under
/// <c>samples</c> for the distribution charts. Fails if the atomicity checks find a violation.
/// </summary>
public sealed class TwoPhaseCommitScenario : IScenario
{
    /// <inheritdoc />
    public string Name => "2pc";

    /// <inheritdoc />
    public string Description => "2PC commit latency, speculative vs non-speculative (committer + 4 participants as processes)";

    /// <inheritdoc />
    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        // The paper's size and a steady state with profile-guided JIT, as the sample's --full; --quick is a smoke run.
        var options = new TwoPhaseCommitOptions { Transactions = context.Pick(TwoPhaseCommitOptions.PaperTransactions, 100), TieredPgo = true };
        var run = await TwoPhaseCommitRun.RunAsync(options, context.Log, context.CancellationToken).ConfigureAwait(false);
        if (!run.Passed)
        {
            throw new InvalidOperationException("The 2PC atomicity checks failed: " + string.Join("; ", run.Speculative!.Violations.Concat(run.NonSpeculative!.Violations)));
        }

        var results = new ScenarioResults();
        foreach (var (key, value) in ResultsJson.Summary(run))
        {
            results.Add(key, value, key.EndsWith("_ms", StringComparison.Ordinal) || key == "ratio" ? 3 : 0);
        }

        results.AddSamples("spec_commit_ms", run.Speculative!.CommitLatenciesMs);
        results.AddSamples("nonspec_commit_ms", run.NonSpeculative!.CommitLatenciesMs);
        return results;
    }
}
