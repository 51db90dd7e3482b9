using Microsoft.Extensions.Logging;

namespace Dse.Darq;

/// <summary>Log messages of general speculation's backpressure (pacing); event ids 4230-4239.</summary>
internal static partial class DarqLog
{
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
}
