using Microsoft.Extensions.Logging;

namespace Dse.Darq;

/// <summary>Log messages of delivery lanes (event ids 4250-4259).</summary>
internal static partial class DarqLog
{
    [LoggerMessage(EventId = 4250, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' backs off destination '{Destination}' for {Delay} after {Failures} failed attempts in a row; other destinations go on.")]
    public static partial void DeliveryBackoff(ILogger logger, string darq, string destination, int failures, TimeSpan delay);

    [LoggerMessage(EventId = 4251, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' delivers to {MaxConcurrentDeliveries} destinations at once (MaxConcurrentDeliveries); {Waiting} more wait for a free lane.")]
    public static partial void DeliveryLanesFull(ILogger logger, string darq, int maxConcurrentDeliveries, int waiting);

    [LoggerMessage(EventId = 4252, Level = LogLevel.Debug,
        Message = "DARQ '{Darq}' holds OUT message {Lsn} back: a rollback made an earlier message to '{Destination}' pending again, which leaves first.")]
    public static partial void DeliveryReordered(ILogger logger, string darq, long lsn, string destination);
}
