namespace Dse.Workflows;

/// <summary>A status query's answer: what the engine knows of one workflow instance now (speculatively).</summary>
/// <param name="Id">The workflow id.</param>
/// <param name="Type">The registered workflow type.</param>
/// <param name="Run">The current run (1, then one more after each continue-as-new).</param>
/// <param name="Status">Its status.</param>
/// <param name="HistoryLength">Events in the current run's history.</param>
/// <param name="PendingCommands">Steps, timers and children of the current run scheduled and not yet finished.</param>
/// <param name="Outcome">The outcome, once the workflow ended or stopped.</param>
public sealed record WorkflowDescription(string Id, string Type, int Run, WorkflowStatus Status, int HistoryLength, int PendingCommands, WorkflowOutcome? Outcome);
