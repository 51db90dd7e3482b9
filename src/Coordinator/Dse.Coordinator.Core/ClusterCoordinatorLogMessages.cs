using Microsoft.Extensions.Logging;

namespace Dse;

/// <summary>Log messages of coordinators; event ids 2000-2099.</summary>
internal static partial class ClusterCoordinatorLogMessages
{
    [LoggerMessage(EventId = 2000, Level = LogLevel.Information, Message = "Participant {ObjectId} registered; restores version {Version} in world-line {WorldLine}")]
    public static partial void Registered(ILogger logger, long objectId, long version, long worldLine);

    [LoggerMessage(EventId = 2001, Level = LogLevel.Warning, Message = "Participant {ObjectId} restarted: world-line {WorldLine}, it restores version {Version}; {Decision}")]
    public static partial void RollbackDecided(ILogger logger, long objectId, long worldLine, long version, RollbackDecision decision);

    [LoggerMessage(EventId = 2002, Level = LogLevel.Information, Message = "Coordinator incarnation {Incarnation} started: {Members} registered participants, world-line {WorldLine}; waiting for {Awaiting} participants to answer")]
    public static partial void Started(ILogger logger, long incarnation, int members, long worldLine, int awaiting);

    [LoggerMessage(EventId = 2003, Level = LogLevel.Information, Message = "Participant {ObjectId} resynchronized {Versions} durable versions from world-line {WorldLine}; {Awaiting} participants still to answer")]
    public static partial void Resynced(ILogger logger, long objectId, int versions, long worldLine, int awaiting);

    [LoggerMessage(EventId = 2004, Level = LogLevel.Information, Message = "Participant {ObjectId} restarted while the coordinator recovers: its {Versions} stored versions are its answer, it connects again once recovery ends; {Awaiting} participants still to answer")]
    public static partial void AnsweredByConnect(ILogger logger, long objectId, int versions, int awaiting);

    [LoggerMessage(EventId = 2005, Level = LogLevel.Information, Message = "Coordinator incarnation {Incarnation} recovered: every participant answered; world-line {WorldLine}")]
    public static partial void RecoveryCompleted(ILogger logger, long incarnation, long worldLine);

    [LoggerMessage(EventId = 2006, Level = LogLevel.Warning, Message = "Participant {ObjectId} removed ({Reason}): its unreported state is lost, world-line {WorldLine}; {Decision}. It must restart to rejoin.")]
    public static partial void ParticipantRemoved(ILogger logger, long objectId, string reason, long worldLine, RollbackDecision decision);

    [LoggerMessage(EventId = 2007, Level = LogLevel.Information, Message = "Participant {ObjectId}, removed earlier, connected again and rejoined the cluster")]
    public static partial void Rejoined(ILogger logger, long objectId);

    [LoggerMessage(EventId = 2008, Level = LogLevel.Critical, Message = "The coordinator journal failed; the coordinator stopped serving and must be restarted")]
    public static partial void Faulted(ILogger logger, Exception exception);

    [LoggerMessage(EventId = 2009, Level = LogLevel.Error, Message = "Removing silent participants failed")]
    public static partial void SweepFailed(ILogger logger, Exception exception);
}
