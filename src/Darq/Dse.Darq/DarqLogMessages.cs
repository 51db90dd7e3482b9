using Microsoft.Extensions.Logging;

namespace Dse.Darq;

/// <summary>
/// The DARQ's source-generated log messages, by concern, each concern in its own range of stable event ids: core
/// 4000-4099, checkpoints and activities 4200-4229, backpressure 4230-4239, delivery lanes 4250-4259, fencing 4265-4269,
/// speculation 4300-4399.
/// </summary>
internal static partial class DarqLogMessages
{
    // Core: open, processor, steps, commits, delivery (4000-4099).
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

    // Checkpoints and activities (4200-4229).
    [LoggerMessage(EventId = 4201, Level = LogLevel.Information,
        Message = "DARQ '{Darq}' checkpoint by incarnation {Incarnation} replaced {Replaced} SELF messages by {SelfCount}; record at {Lsn}.")]
    public static partial void CheckpointTaken(ILogger logger, string darq, long incarnation, int replaced, int selfCount, long lsn);

    [LoggerMessage(EventId = 4202, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' refused a checkpoint: LSN {Lsn} {Reason}.")]
    public static partial void CheckpointRejected(ILogger logger, string darq, long lsn, DarqStepRejection reason);

    [LoggerMessage(EventId = 4203, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' automatic checkpoint of processor incarnation {Incarnation} failed and changed nothing; it is tried again later.")]
    public static partial void AutoCheckpointFailed(ILogger logger, Exception exception, string darq, long incarnation);

    [LoggerMessage(EventId = 4220, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' automatic checkpoint of processor incarnation {Incarnation} is due ({Threshold} reached; {SelfCount} unconsumed SELF messages, {SelfBytes} bytes).")]
    public static partial void AutoCheckpointDue(ILogger logger, string darq, long incarnation, string threshold, int selfCount, long selfBytes);

    [LoggerMessage(EventId = 4210, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' runs activity '{Activity}' at LSN {Lsn} (token {Token}).")]
    public static partial void ActivityStarted(ILogger logger, string darq, string activity, long lsn, string token);

    [LoggerMessage(EventId = 4211, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' activity '{Activity}' at LSN {Lsn} failed on attempt {Attempt}; retrying in {DelayMs} ms with the same token.")]
    public static partial void ActivityFailed(ILogger logger, Exception exception, string darq, string activity, long lsn, int attempt, long delayMs);

    [LoggerMessage(EventId = 4212, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' activity '{Activity}' at LSN {Lsn} completed after {Attempts} attempts by the step ending at {CompletionLsn}.")]
    public static partial void ActivityCompleted(ILogger logger, string darq, string activity, long lsn, int attempts, long completionLsn);

    [LoggerMessage(EventId = 4213, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' activity '{Activity}' at LSN {Lsn} stopped: its processor was superseded or its completion step was refused; the activity is left to the current processor.")]
    public static partial void ActivityCompletionRefused(ILogger logger, Exception exception, string darq, string activity, long lsn);

    [LoggerMessage(EventId = 4214, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' activity '{Activity}' at LSN {Lsn} stopped on an unexpected error; it stays pending until a runner runs it again.")]
    public static partial void ActivityError(ILogger logger, Exception exception, string darq, string activity, long lsn);

    // Delivery lanes (4250-4259).
    [LoggerMessage(EventId = 4250, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' backs off destination '{Destination}' for {Delay} after {Failures} failed attempts in a row; other destinations go on.")]
    public static partial void DeliveryBackoff(ILogger logger, string darq, string destination, int failures, TimeSpan delay);

    [LoggerMessage(EventId = 4251, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' delivers to {MaxConcurrentDeliveries} destinations at once (MaxConcurrentDeliveries); {Waiting} more wait for a free lane.")]
    public static partial void DeliveryLanesFull(ILogger logger, string darq, int maxConcurrentDeliveries, int waiting);

    [LoggerMessage(EventId = 4252, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' holds OUT message {Lsn} back: a rollback made an earlier message to '{Destination}' pending again, which leaves first.")]
    public static partial void DeliveryReordered(ILogger logger, string darq, long lsn, string destination);

    // Storage fencing (4265-4269; the storage layer's own are 4260-4264).
    [LoggerMessage(EventId = 4265, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' is fenced: another instance took its storage over. Its background commit stops; dispose this instance.")]
    public static partial void CommitLoopFenced(ILogger logger, Exception exception, string darq);

    [LoggerMessage(EventId = 4266, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' could not write commit {CommitNum} to device '{Device}': another instance took the storage over (fenced); the commit is not retried.")]
    public static partial void CommitWriteFenced(ILogger logger, string darq, long commitNum, string device);

    [LoggerMessage(EventId = 4267, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' is fenced: another instance took its storage over. Its delivery stops (that instance delivers the pending OUT messages); dispose this instance.")]
    public static partial void DeliveryLoopFenced(ILogger logger, Exception exception, string darq);

    // General speculation's backpressure (4230-4239).
    [LoggerMessage(EventId = 4230, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' holds new actions back: {Uncommitted} persisted versions are not committed by the coordinator " +
            "(limit {MaxVersions}) and the speculation section takes {Bytes} bytes (budget {Budget}). The coordinator commits more " +
            "slowly than versions advance; actions resume once it commits. {Suppressed} shorter episodes since the last warning.")]
    public static partial void BackpressureStarted(ILogger logger, string darq, int uncommitted, int maxVersions, int bytes, int budget, int suppressed);

    [LoggerMessage(EventId = 4231, Level = LogLevel.Information,
        Message = "DARQ '{Darq}' resumes new actions after {DurationMs} ms of backpressure; {Held} actions waited.")]
    public static partial void BackpressureEnded(ILogger logger, string darq, long durationMs, int held);

    [LoggerMessage(EventId = 4232, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' backpressure {Change}: {Uncommitted} uncommitted versions, speculation section {Bytes} bytes.")]
    public static partial void BackpressureChanged(ILogger logger, string darq, string change, int uncommitted, int bytes);

    [LoggerMessage(EventId = 4233, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' holds a change of producer {Producer}: its undo entries would leave the speculation section " +
            "{Bytes} of {Limit} bytes; it waits for the coordinator to commit.")]
    public static partial void ProducerChangeHeld(ILogger logger, string darq, long producer, int bytes, int limit);

    // General speculation (4300-4399).
    [LoggerMessage(EventId = 4300, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' refused a message from world-line {MessageWorldLine}; it is in world-line {WorldLine}.")]
    public static partial void MessageRefused(ILogger logger, string darq, long messageWorldLine, long worldLine);

    [LoggerMessage(EventId = 4301, Level = LogLevel.Warning,
        Message = "DARQ '{Darq}' rolled back to version {Version}: the log from address {VoidFrom} to the ROLLBACK entry at {Marker} is void.")]
    public static partial void RolledBack(ILogger logger, string darq, long version, long voidFrom, long marker);

    [LoggerMessage(EventId = 4302, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' could not persist version {Version}.")]
    public static partial void PersistFailed(ILogger logger, Exception exception, string darq, long version);
}
