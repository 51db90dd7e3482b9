namespace Dse.Workflows;

/// <summary>How a workflow's run ended (or why it is stopped).</summary>
/// <param name="Status">Completed, Failed, Cancelled or Stopped.</param>
/// <param name="Result">The serialized result, when completed.</param>
/// <param name="ErrorType">The exception's type name when failed; the stop's exception type when stopped.</param>
/// <param name="ErrorMessage">The exception's message, or the stop's reason.</param>
public sealed record WorkflowOutcome(WorkflowStatus Status, ReadOnlyMemory<byte> Result, string? ErrorType, string? ErrorMessage);
