using Microsoft.Extensions.Logging;

namespace Dse.Services;

/// <summary>Log events of the speculative services (event ids 6000-6099).</summary>
internal static partial class ServicesLogMessages
{
    [LoggerMessage(EventId = 6000, Level = LogLevel.Information, Message = "SpeculativeLog {ObjectId} restored version {Version}: dropped addresses {DropFrom} to {DropUntil}")]
    public static partial void LogRolledBack(ILogger logger, long objectId, long version, long dropFrom, long dropUntil);

    [LoggerMessage(EventId = 6001, Level = LogLevel.Warning, Message = "SpeculativeLog {ObjectId} could not commit version {Version}")]
    public static partial void LogCommitFailed(ILogger logger, long objectId, long version, Exception exception);

    [LoggerMessage(EventId = 6002, Level = LogLevel.Debug, Message = "SpeculativeLog {ObjectId} pruned through version {Version}: truncating before address {Address}")]
    public static partial void LogPruned(ILogger logger, long objectId, long version, long address);

    [LoggerMessage(EventId = 6010, Level = LogLevel.Information, Message = "SpeculativeKv {ObjectId} restored version {Version} (checkpoint {Token})")]
    public static partial void KvRestored(ILogger logger, long objectId, long version, Guid token);

    [LoggerMessage(EventId = 6011, Level = LogLevel.Warning, Message = "SpeculativeKv {ObjectId} could not checkpoint versions {FirstVersion} to {LastVersion}")]
    public static partial void KvCheckpointFailed(ILogger logger, long objectId, long firstVersion, long lastVersion, Exception exception);

    [LoggerMessage(EventId = 6012, Level = LogLevel.Warning, Message = "SpeculativeKv {ObjectId} could not delete checkpoint files while pruning through version {Version}")]
    public static partial void KvPruneFailed(ILogger logger, long objectId, long version, Exception exception);
}
