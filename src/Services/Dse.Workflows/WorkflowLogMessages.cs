using Microsoft.Extensions.Logging;

namespace Dse.Workflows;

/// <summary>The engine's log events (6100-6199).</summary>
internal static partial class WorkflowLogMessages
{
    [LoggerMessage(EventId = 6100, Level = LogLevel.Error, Message = "Workflow {WorkflowId} run {Run} is stopped")]
    public static partial void LogRunStopped(ILogger logger, string workflowId, int run, Exception reason);

    [LoggerMessage(EventId = 6101, Level = LogLevel.Error, Message = "The workflow log holds an entry at LSN {Lsn} that cannot be read: {Problem}; the workflow it belongs to stops when the gap it leaves in its history is found")]
    public static partial void LogUnattributedEntry(ILogger logger, long lsn, string problem);

    [LoggerMessage(EventId = 6102, Level = LogLevel.Information, Message = "Workflow engine reloads its history (generation {Generation}): {Reason}")]
    public static partial void LogReload(ILogger logger, long generation, string reason);

    [LoggerMessage(EventId = 6103, Level = LogLevel.Information, Message = "Workflow engine loaded generation {Generation}: {Open} open and {Closed} closed workflows from {Events} events")]
    public static partial void LogLoaded(ILogger logger, long generation, int open, int closed, int events);

    [LoggerMessage(EventId = 6104, Level = LogLevel.Debug, Message = "Workflow {WorkflowId} step {Seq} '{Step}' attempt {Attempt} failed (retrying: {Retrying})")]
    public static partial void LogStepAttemptFailed(ILogger logger, string workflowId, int seq, string step, int attempt, bool retrying, Exception error);

    [LoggerMessage(EventId = 6105, Level = LogLevel.Error, Message = "Workflow engine could not load its history; retrying")]
    public static partial void LogLoadFailed(ILogger logger, Exception error);
}
