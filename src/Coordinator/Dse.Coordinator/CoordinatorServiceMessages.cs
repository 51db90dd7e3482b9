using Microsoft.Extensions.Logging;

namespace Dse.Coordinator;

/// <summary>Source-generated log messages of the coordinator service and its host; event ids 3200-3299 are stable.</summary>
internal static partial class CoordinatorServiceMessages
{
    [LoggerMessage(EventId = 3200, Level = LogLevel.Information,
        Message = "Coordinator opened on log {Description}: incarnation {Incarnation}, {RecoveredEntries} journal entries recovered, recovering {IsRecovering}.")]
    public static partial void Opened(ILogger logger, string description, long incarnation, int recoveredEntries, bool isRecovering);

    [LoggerMessage(EventId = 3201, Level = LogLevel.Information,
        Message = "Coordinator closed; log {Description} released.")]
    public static partial void Closed(ILogger logger, string description);

    [LoggerMessage(EventId = 3202, Level = LogLevel.Information,
        Message = "{Method} refused with {Code}: {Detail}")]
    public static partial void Refused(ILogger logger, string method, CoordinatorErrorCode code, string detail);

    [LoggerMessage(EventId = 3203, Level = LogLevel.Debug,
        Message = "WaitForChange past epoch {KnownEpoch} ended after {Wait} without a change; answered with the current state.")]
    public static partial void LongPollExpired(ILogger logger, long knownEpoch, TimeSpan wait);

    [LoggerMessage(EventId = 3204, Level = LogLevel.Debug,
        Message = "WaitForChange past epoch {KnownEpoch} waits up to {Wait}.")]
    public static partial void LongPollWaiting(ILogger logger, long knownEpoch, TimeSpan wait);
}
