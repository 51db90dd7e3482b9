using Microsoft.Extensions.Logging;

namespace Dse.Darq;

/// <summary>Log messages of checkpoints and activities; event ids are stable (4200-4299).</summary>
internal static partial class DarqLog
{
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
}
