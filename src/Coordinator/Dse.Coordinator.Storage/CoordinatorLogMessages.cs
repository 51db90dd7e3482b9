using Microsoft.Extensions.Logging;

namespace Dse.Coordinator;

/// <summary>Source-generated log messages of the coordinator logs; event ids 3100-3199 are stable.</summary>
internal static partial class CoordinatorLogMessages
{
    [LoggerMessage(EventId = 3100, Level = LogLevel.Information,
        Message = "Coordinator log {Description} opened: recovered {RecordCount} records ({Length} bytes).")]
    public static partial void Opened(ILogger logger, string description, int recordCount, long length);

    [LoggerMessage(EventId = 3101, Level = LogLevel.Warning,
        Message = "Coordinator log {Description} had a torn tail: truncated {Length} bytes at offset {Offset} ({Problem}).")]
    public static partial void TornTailTruncated(ILogger logger, string description, long offset, long length, string problem);

    [LoggerMessage(EventId = 3102, Level = LogLevel.Warning,
        Message = "Coordinator log {Description} was leased by another coordinator incarnation; broke its lease to take over.")]
    public static partial void LeaseBroken(ILogger logger, string description);

    [LoggerMessage(EventId = 3103, Level = LogLevel.Error,
        Message = "Coordinator log {Description}: this incarnation was fenced out by a newer one; it must stop acting as the coordinator.")]
    public static partial void Fenced(ILogger logger, string description, Exception? exception);

    [LoggerMessage(EventId = 3104, Level = LogLevel.Error,
        Message = "Coordinator log {Description}: an append of {Length} bytes failed with an unknown outcome; the instance is faulted, reopen the log.")]
    public static partial void AppendFaulted(ILogger logger, string description, int length, Exception exception);

    [LoggerMessage(EventId = 3105, Level = LogLevel.Warning,
        Message = "Coordinator log {Description}: releasing the lease on dispose failed; the next incarnation will break it.")]
    public static partial void LeaseReleaseFailed(ILogger logger, string description, Exception exception);

    [LoggerMessage(EventId = 3106, Level = LogLevel.Information,
        Message = "Coordinator log {Description}: a retried append found its own record already at offset {Offset}; counted once.")]
    public static partial void RetriedAppendConfirmed(ILogger logger, string description, long offset);

    [LoggerMessage(EventId = 3107, Level = LogLevel.Warning,
        Message = "Coordinator log {Description} has {BlockCount} committed blocks of the 50000 an append blob can hold; compact it before it fills.")]
    public static partial void AppendBlobFilling(ILogger logger, string description, int blockCount);
}
