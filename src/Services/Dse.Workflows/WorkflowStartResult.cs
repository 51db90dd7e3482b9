namespace Dse.Workflows;

/// <summary>The instance a start refers to.</summary>
/// <param name="Id">The workflow id.</param>
/// <param name="Run">Its current run.</param>
/// <param name="AlreadyStarted">True when an instance with this id existed already: the start recorded nothing.</param>
public sealed record WorkflowStartResult(string Id, int Run, bool AlreadyStarted);
