using Grpc.Core;
using Microsoft.Extensions.Logging;

namespace Dse.Darq.Grpc;

/// <summary>Source-generated log messages of DARQ over gRPC; event ids are stable (4100-4199, operator calls 4240-4249).</summary>
internal static partial class DarqGrpcLogMessages
{
    [LoggerMessage(EventId = 4100, Level = LogLevel.Information,
        Message = "DARQ '{Darq}': remote processor incarnation {Incarnation} registered from {Peer}; replaying {ReplayCount} messages.")]
    public static partial void ProcessorRegistered(ILogger logger, string darq, long incarnation, string peer, int replayCount);

    [LoggerMessage(EventId = 4101, Level = LogLevel.Information,
        Message = "DARQ '{Darq}': the stream of remote processor incarnation {Incarnation} ends: {Reason}.")]
    public static partial void ProcessorStreamEnded(ILogger logger, string darq, long incarnation, string reason);

    [LoggerMessage(EventId = 4102, Level = LogLevel.Debug,
        Message = "DarqService.{Method} refused with {Status}: {Detail}")]
    public static partial void Refused(ILogger logger, string method, StatusCode status, string detail);

    [LoggerMessage(EventId = 4103, Level = LogLevel.Warning,
        Message = "DarqService.{Method} failed unexpectedly")]
    public static partial void Failed(ILogger logger, Exception exception, string method);

    [LoggerMessage(EventId = 4104, Level = LogLevel.Information,
        Message = "DARQ '{Darq}' was reopened since address {Address} was handed out: a WaitForCommit for instance {Instance} (processor incarnation {Incarnation}, 0 for a delivery) is refused, the DARQ being instance {CurrentInstance} now (the address may be of a lost step or batch).")]
    public static partial void RestartedSinceRegistration(ILogger logger, string darq, long address, long instance, long currentInstance, long incarnation);

    [LoggerMessage(EventId = 4110, Level = LogLevel.Warning,
        Message = "Remote producer {ProducerId} of DARQ '{Darq}': enqueue of sequence number {SequenceNumber} failed with {Status} (attempt {Attempt}); resending in {DelayMs} ms.")]
    public static partial void EnqueueRetrying(ILogger logger, long producerId, string darq, long sequenceNumber, StatusCode status, int attempt, long delayMs);

    [LoggerMessage(EventId = 4120, Level = LogLevel.Warning,
        Message = "Remote processor incarnation {Incarnation} of DARQ '{Darq}': automatic checkpoint failed; nothing changed, tried again after a later step.")]
    public static partial void AutoCheckpointFailed(ILogger logger, Exception exception, string darq, long incarnation);

    [LoggerMessage(EventId = 4121, Level = LogLevel.Debug,
        Message = "Remote processor incarnation {Incarnation} of DARQ '{Darq}': automatic checkpoint due ({Threshold} reached; {SelfCount} unconsumed SELF messages, {SelfBytes} bytes).")]
    public static partial void AutoCheckpointDue(ILogger logger, string darq, long incarnation, string threshold, int selfCount, long selfBytes);

    [LoggerMessage(EventId = 4122, Level = LogLevel.Debug,
        Message = "Remote processor incarnation {Incarnation} of DARQ '{Darq}': automatic checkpoint due ({Threshold} reached) waits until the replay's SELF messages are read.")]
    public static partial void AutoCheckpointDeferred(ILogger logger, string darq, long incarnation, string threshold);

    [LoggerMessage(EventId = 4240, Level = LogLevel.Warning,
        Message = "DarqService.{Method} from {Peer} denied by DarqGrpcServiceOptions.AuthorizeOperatorCall.")]
    public static partial void OperatorCallDenied(ILogger logger, string method, string peer);

    [LoggerMessage(EventId = 4241, Level = LogLevel.Information,
        Message = "DARQ '{Darq}': operator at {Peer} retried parked destination '{Destination}' (was parked: {WasParked}).")]
    public static partial void OperatorRetriedParkedDelivery(ILogger logger, string darq, string destination, bool wasParked, string peer);

    [LoggerMessage(EventId = 4242, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}': operator at {Peer} discarded pending OUT message {Lsn}; it is never delivered.")]
    public static partial void OperatorDiscardedOut(ILogger logger, string darq, long lsn, string peer);

    [LoggerMessage(EventId = 4243, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}': operator at {Peer} retired producer {ProducerId} (retired: {Retired}); a message it sends from now on is taken as new.")]
    public static partial void OperatorRetiredProducer(ILogger logger, string darq, long producerId, bool retired, string peer);
}
