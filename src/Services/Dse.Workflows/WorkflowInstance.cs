namespace Dse.Workflows;

/// <summary>What the engine knows of one workflow id in one generation: its current run, or how it ended.</summary>
/// <remarks>Guarded by the engine's lock.</remarks>
internal sealed class WorkflowInstance(string id, string type, int run)
{
    /// <summary>The workflow id.</summary>
    public string Id { get; } = id;

    /// <summary>The workflow type.</summary>
    public string Type { get; } = type;

    /// <summary>The current run's number.</summary>
    public int Run { get; set; } = run;

    /// <summary>Where it stands.</summary>
    public WorkflowStatus Status { get; set; } = WorkflowStatus.Running;

    /// <summary>How it ended or why it stopped; null while running.</summary>
    public WorkflowOutcome? Outcome { get; set; }

    /// <summary>
    /// The log's version and world-line in which the outcome was appended, when this generation appended it; null for an
    /// outcome read back from the log (or a stop, which is not recorded).
    /// </summary>
    public (long Version, long WorldLine)? OutcomeVertex { get; set; }

    /// <summary>The current run, while one is driven.</summary>
    public WorkflowRun? Current { get; set; }

    /// <summary>Whether a cancellation was recorded for the current run.</summary>
    public bool CancelRequested { get; set; }

    /// <summary>History length of a closed instance (the run's is read live while it runs).</summary>
    public int ClosedHistoryLength { get; set; }

    /// <summary>The status query's answer.</summary>
    public WorkflowDescription Describe() => new(
        Id,
        Type,
        Run,
        Status,
        Current?.HistoryLength ?? ClosedHistoryLength,
        Status == WorkflowStatus.Running ? Current?.PendingCommands ?? 0 : 0,
        Outcome);
}
