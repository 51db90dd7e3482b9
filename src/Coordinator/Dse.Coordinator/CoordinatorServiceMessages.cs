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

    /// <summary>
    /// Refusals that are part of normal operation or of an outage (Unavailable, ResyncRequired): participants retry
    /// them every few milliseconds, so they are logged at Debug; the outage itself is logged once, where it happened.
    /// </summary>
    [LoggerMessage(EventId = 3205, Level = LogLevel.Debug,
        Message = "{Method} refused with {Code}: {Detail}")]
    public static partial void RefusedRetryable(ILogger logger, string method, CoordinatorErrorCode code, string detail);

    [LoggerMessage(EventId = 3206, Level = LogLevel.Warning,
        Message = "Operator request from {Peer}: participant {ObjectId} removed from the cluster (while recovering: {WhileRecovering}); anything it exposed that the others cannot reconstruct may be lost.")]
    public static partial void ParticipantRemoved(ILogger logger, string peer, long objectId, bool whileRecovering);

    [LoggerMessage(EventId = 3207, Level = LogLevel.Warning,
        Message = "Operator request from {Peer}: participant {ObjectId} was removed already; nothing changed.")]
    public static partial void ParticipantAlreadyRemoved(ILogger logger, string peer, long objectId);

    [LoggerMessage(EventId = 3209, Level = LogLevel.Debug,
        Message = "Connect of participant {ObjectId} with {Versions} stored versions received.")]
    public static partial void Connecting(ILogger logger, long objectId, int versions);

    [LoggerMessage(EventId = 3208, Level = LogLevel.Critical,
        Message = "The coordinator stopped serving (its journal failed: {Reason}); stopping the host so that a supervisor restarts it and the log is released.")]
    public static partial void StoppingOnFault(ILogger logger, string reason, Exception fault);

    [LoggerMessage(EventId = 3203, Level = LogLevel.Debug,
        Message = "WaitForChange past epoch {KnownEpoch} ended after {Wait} without a change; answered with the current state.")]
    public static partial void LongPollExpired(ILogger logger, long knownEpoch, TimeSpan wait);

    [LoggerMessage(EventId = 3204, Level = LogLevel.Debug,
        Message = "WaitForChange past epoch {KnownEpoch} waits up to {Wait}.")]
    public static partial void LongPollWaiting(ILogger logger, long knownEpoch, TimeSpan wait);

    [LoggerMessage(EventId = 3211, Level = LogLevel.Information,
        Message = "Coordinator calls need a bearer token from participants file {Source}: {Participants} participants, {Operators} operator tokens.")]
    public static partial void Authenticating(ILogger logger, string source, int participants, int operators);

    [LoggerMessage(EventId = 3212, Level = LogLevel.Information,
        Message = "{Method} from {Peer} refused with Unauthenticated: {Reason}.")]
    public static partial void Unauthenticated(ILogger logger, string method, string peer, string reason);

    [LoggerMessage(EventId = 3213, Level = LogLevel.Warning,
        Message = "{Method} from {Peer} refused with PermissionDenied: {Reason}")]
    public static partial void PermissionDenied(ILogger logger, string method, string peer, string reason);
}
