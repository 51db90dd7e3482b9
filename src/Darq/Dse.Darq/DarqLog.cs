using Microsoft.Extensions.Logging;

namespace Dse.Darq;

/// <summary>Source-generated log messages of DARQ; event ids are stable (4000-4099).</summary>
internal static partial class DarqLog
{
    [LoggerMessage(EventId = 4001, Level = LogLevel.Information,
        Message = "DARQ '{Darq}' opened: commit {CommitNum}, log [{BeginAddress}, {TailAddress}), {Unconsumed} unconsumed messages, {Producers} producers, incarnation {Incarnation}.")]
    public static partial void Opened(ILogger logger, string darq, long commitNum, long beginAddress, long tailAddress, int unconsumed, int producers, long incarnation);

    [LoggerMessage(EventId = 4002, Level = LogLevel.Information,
        Message = "DARQ '{Darq}' registered processor incarnation {Incarnation}; replaying {SelfCount} SELF and {InCount} IN messages.")]
    public static partial void ProcessorRegistered(ILogger logger, string darq, long incarnation, int selfCount, int inCount);

    [LoggerMessage(EventId = 4003, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' refused a request from stale processor incarnation {Incarnation} (current {CurrentIncarnation}).")]
    public static partial void StaleIncarnation(ILogger logger, string darq, long incarnation, long currentIncarnation);

    [LoggerMessage(EventId = 4004, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' refused a step: LSN {Lsn} {Reason}.")]
    public static partial void StepRejected(ILogger logger, string darq, long lsn, DarqStepRejection reason);

    [LoggerMessage(EventId = 4005, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' truncated its log before address {BeginAddress}.")]
    public static partial void Truncated(ILogger logger, string darq, long beginAddress);

    [LoggerMessage(EventId = 4006, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' background commit failed; it is retried at the next interval.")]
    public static partial void CommitFailed(ILogger logger, Exception exception, string darq);

    [LoggerMessage(EventId = 4007, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' ignores commit slot {Slot}: {Problem}.")]
    public static partial void CommitSlotInvalid(ILogger logger, string darq, int slot, string problem);

    [LoggerMessage(EventId = 4008, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' could not write commit {CommitNum} to device '{Device}' (error code {ErrorCode}, attempt {Attempt}); retrying in {DelayMs} ms.")]
    public static partial void CommitWriteFailed(ILogger logger, string darq, long commitNum, string device, uint errorCode, int attempt, long delayMs);

    [LoggerMessage(EventId = 4009, Level = LogLevel.Information,
        Message = "DARQ '{Darq}' wrote commit {CommitNum} after {Attempts} attempts.")]
    public static partial void CommitWriteRecovered(ILogger logger, string darq, long commitNum, int attempts);

    [LoggerMessage(EventId = 4010, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' background commit loop caught an unexpected error; it keeps running.")]
    public static partial void CommitLoopError(ILogger logger, Exception exception, string darq);

    [LoggerMessage(EventId = 4011, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' cannot deliver OUT message {Lsn}: destination '{Destination}' is unknown; the message stays pending and is retried.")]
    public static partial void UnknownDestination(ILogger logger, string darq, long lsn, string destination);

    [LoggerMessage(EventId = 4012, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' could not deliver OUT message {Lsn} to '{Destination}'; it stays pending and is retried.")]
    public static partial void DeliveryFailed(ILogger logger, Exception exception, string darq, long lsn, string destination);

    [LoggerMessage(EventId = 4013, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' delivery loop caught an unexpected error; it keeps running.")]
    public static partial void DeliveryLoopError(ILogger logger, Exception exception, string darq);

    [LoggerMessage(EventId = 4014, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' OUT message {Lsn} was acknowledged by its destination.")]
    public static partial void Delivered(ILogger logger, string darq, long lsn);

    [LoggerMessage(EventId = 4015, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' parked destination '{Destination}': it refused OUT message {Lsn} for good ({Reason}). The message stays pending; " +
            "nothing more is sent there until Darq.RetryParkedDelivery, the automatic retry after {RetryInterval}, or a reopen; Darq.DiscardOutAsync gives the message up.")]
    public static partial void DeliveryParked(ILogger logger, Exception? exception, string darq, string destination, long lsn, string reason, string retryInterval);

    [LoggerMessage(EventId = 4016, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' discarded OUT message {Lsn} to '{Destination}' on request: it is no longer sent (the destination may hold it already if an earlier attempt got through).")]
    public static partial void OutDiscarded(ILogger logger, string darq, long lsn, string destination);

    [LoggerMessage(EventId = 4017, Level = LogLevel.Information,
        Message = "DARQ '{Darq}' tries parked destination '{Destination}' again ({Why}).")]
    public static partial void DeliveryUnparked(ILogger logger, string darq, string destination, string why);

    [LoggerMessage(EventId = 4018, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' cannot hand its processor a spilled IN message: reading it back from the log found it damaged. The processor's stream ends with this error; nothing was consumed.")]
    public static partial void FeedFailed(ILogger logger, Exception exception, string darq);

    [LoggerMessage(EventId = 4019, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' could not read spilled IN messages back from the log; trying again.")]
    public static partial void FeedRetry(ILogger logger, Exception exception, string darq);

    [LoggerMessage(EventId = 4020, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' closes without its {Loop} loop, which did not stop within {Timeout} of being cancelled (a storage read or destination call that does not return).")]
    public static partial void LoopDidNotStop(ILogger logger, string darq, string loop, TimeSpan timeout);

    [LoggerMessage(EventId = 4021, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' closes without its storage, which did not close within {Timeout} (a device operation that does not return); its storage locks stay taken until the process ends.")]
    public static partial void StorageDidNotClose(ILogger logger, string darq, TimeSpan timeout);

    [LoggerMessage(EventId = 4022, Level = LogLevel.Information,
        Message = "DARQ '{Darq}' retired producer {ProducerId} (largest sequence number {Sequence}); {Count} producers remain in the deduplication table.")]
    public static partial void ProducerRetired(ILogger logger, string darq, long producerId, long sequence, int count);

    [LoggerMessage(EventId = 4023, Level = LogLevel.Information,
        Message = "DARQ '{Darq}' retires producer {ProducerId}: silent for {Silent} (DarqOptions.RetireIdleProducersAfter {Limit}).")]
    public static partial void IdleProducerRetiring(ILogger logger, string darq, long producerId, TimeSpan silent, TimeSpan limit);
}
