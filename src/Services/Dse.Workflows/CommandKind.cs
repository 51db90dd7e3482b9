namespace Dse.Workflows;

/// <summary>What a workflow command does.</summary>
internal enum CommandKind
{
    /// <summary>Runs a step (a call or a local delegate).</summary>
    Step,

    /// <summary>Waits until a deadline.</summary>
    Timer,

    /// <summary>Starts a child workflow and waits for its outcome.</summary>
    Child,
}
