using Microsoft.Extensions.Logging;

namespace Dse;

/// <summary>Log messages of coordinators; event ids 2000-2099.</summary>
internal static partial class CoordinatorLog
{
    [LoggerMessage(EventId = 2000, Level = LogLevel.Information, Message = "Participant {ObjectId} registered; restores version {Version} in world-line {WorldLine}")]
    public static partial void Registered(ILogger logger, long objectId, long version, long worldLine);

    [LoggerMessage(EventId = 2001, Level = LogLevel.Warning, Message = "Participant {ObjectId} restarted: world-line {WorldLine}, it restores version {Version}; {Decision}")]
    public static partial void RollbackDecided(ILogger logger, long objectId, long worldLine, long version, RollbackDecision decision);
}
