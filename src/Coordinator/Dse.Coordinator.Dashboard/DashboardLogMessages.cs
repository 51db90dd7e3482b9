using Microsoft.Extensions.Logging;

namespace Dse.Coordinator.Dashboard;

/// <summary>The dashboard's log messages (event ids 3300-3309).</summary>
internal static partial class DashboardLogMessages
{
    [LoggerMessage(EventId = 3300, Level = LogLevel.Warning, Message = "Participant {ObjectId} removed from the dashboard by operator {Operator} (from {Peer}); it was removed before: {AlreadyRemoved}")]
    public static partial void ParticipantRemoved(ILogger logger, long objectId, string @operator, string peer, bool alreadyRemoved);

    [LoggerMessage(EventId = 3301, Level = LogLevel.Warning, Message = "Dashboard removal of participant {ObjectId} refused (from {Peer}): {Reason}")]
    public static partial void RemoveRefused(ILogger logger, long objectId, string peer, string reason);
}
