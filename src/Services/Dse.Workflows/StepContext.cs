namespace Dse.Workflows;

/// <summary>What a step's code knows of itself.</summary>
/// <param name="WorkflowId">The workflow running the step.</param>
/// <param name="Run">The workflow's run.</param>
/// <param name="StepIndex">The step's command number in the run.</param>
/// <param name="Attempt">This attempt (1 for the first).</param>
public sealed record StepContext(string WorkflowId, int Run, int StepIndex, int Attempt)
{
    /// <summary>
    /// The same for every attempt of this step and for a step re-issued after a crash or a rollback: pass it to the callee
    /// so that it acts at most once.
    /// </summary>
    public string IdempotencyKey => $"{WorkflowId}/{Run}/{StepIndex}";
}
