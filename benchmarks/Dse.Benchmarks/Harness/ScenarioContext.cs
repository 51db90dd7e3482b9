namespace Dse.Benchmarks.Harness;

/// <summary>What the harness hands a scenario: the run mode, a progress log and cancellation.</summary>
/// <param name="Quick">
/// Whether <c>--quick</c> was given: a smoke run that shows the scenario works, finishing in a few seconds; its numbers
/// are not measurements, so pick the smallest settings that still run every phase.
/// </param>
/// <param name="Log">Progress and diagnostics; not stdout, which carries only the RESULT line.</param>
/// <param name="CancellationToken">Cancelled on Ctrl+C.</param>
public sealed record ScenarioContext(bool Quick, TextWriter Log, CancellationToken CancellationToken)
{
    /// <summary>Picks the full-run or the quick-run value of a setting.</summary>
    public T Pick<T>(T full, T quick) => Quick ? quick : full;
}
