using Microsoft.Extensions.Logging;

namespace Dse.Workflows.Grpc;

/// <summary>Source-generated log messages of the workflow engine's hosting; event ids 6200-6299 are stable.</summary>
internal static partial class WorkflowsHostingLogMessages
{
    [LoggerMessage(EventId = 6200, Level = LogLevel.Information, Message = "Workflow engine waits for the DSE runtime, then loads its history from SpeculativeLog {ObjectId}")]
    public static partial void Waiting(ILogger logger, long objectId);

    [LoggerMessage(EventId = 6201, Level = LogLevel.Information, Message = "Workflow engine loaded its history and serves")]
    public static partial void Serving(ILogger logger);

    [LoggerMessage(EventId = 6202, Level = LogLevel.Error, Message = "Workflow engine could not start; its gRPC calls fail with UNAVAILABLE until the host restarts")]
    public static partial void StartFailed(ILogger logger, Exception exception);

    [LoggerMessage(EventId = 6203, Level = LogLevel.Information, Message = "Workflow engine stopped")]
    public static partial void Stopped(ILogger logger);
}
