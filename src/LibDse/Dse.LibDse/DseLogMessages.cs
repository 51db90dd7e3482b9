using Microsoft.Extensions.Logging;

namespace Dse;

/// <summary>Log messages of the LibDse runtime; event ids 1000-1099.</summary>
internal static partial class DseLogMessages
{
    [LoggerMessage(EventId = 1000, Level = LogLevel.Information, Message = "StateObject {ObjectId} connected: restored version {Version}, world-line {WorldLine}, restart {IsRestart}")]
    public static partial void Connected(ILogger logger, long objectId, long version, long worldLine, bool isRestart);

    [LoggerMessage(EventId = 1001, Level = LogLevel.Warning, Message = "StateObject {ObjectId} rolled back to version {Version} for world-line {WorldLine}")]
    public static partial void RolledBack(ILogger logger, long objectId, long version, long worldLine);

    [LoggerMessage(EventId = 1002, Level = LogLevel.Information, Message = "StateObject {ObjectId} kept its state through world-line {WorldLine}: nothing it holds depends on lost state")]
    public static partial void RollbackSkipped(ILogger logger, long objectId, long worldLine);

    [LoggerMessage(EventId = 1003, Level = LogLevel.Error, Message = "StateObject {ObjectId} faulted; restart it on the same storage")]
    public static partial void Faulted(ILogger logger, long objectId, Exception exception);

    [LoggerMessage(EventId = 1004, Level = LogLevel.Warning, Message = "StateObject {ObjectId} could not reach the coordinator; retrying")]
    public static partial void CoordinatorUnavailable(ILogger logger, long objectId, Exception exception);

    [LoggerMessage(EventId = 1005, Level = LogLevel.Debug, Message = "StateObject {ObjectId}: report of version {Version} was {Outcome}")]
    public static partial void ReportOutcome(ILogger logger, long objectId, long version, ReportOutcome outcome);

    [LoggerMessage(EventId = 1006, Level = LogLevel.Warning, Message = "StateObject {ObjectId} could not prune its storage up to version {Version}")]
    public static partial void PruneFailed(ILogger logger, long objectId, long version, Exception exception);

    [LoggerMessage(EventId = 1008, Level = LogLevel.Information, Message = "StateObject {ObjectId} resynchronized {Versions} durable versions with coordinator incarnation {Incarnation}")]
    public static partial void Resynced(ILogger logger, long objectId, long incarnation, int versions);

    [LoggerMessage(EventId = 1009, Level = LogLevel.Debug, Message = "StateObject {ObjectId}: the coordinator is still unavailable ({Reason})")]
    public static partial void CoordinatorStillUnavailable(ILogger logger, long objectId, string reason);

    [LoggerMessage(EventId = 1010, Level = LogLevel.Information, Message = "{Reason}")]
    public static partial void HeaderRejected(ILogger logger, string reason);

    [LoggerMessage(EventId = 1011, Level = LogLevel.Warning, Message = "StateObject {ObjectId} discards its persisted versions from {Version} on at restart, as a crash would have lost them: {Reason}")]
    public static partial void ImplausibleVersionDiscarded(ILogger logger, long objectId, long version, string reason);
}
