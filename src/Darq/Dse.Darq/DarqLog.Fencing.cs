using Microsoft.Extensions.Logging;

namespace Dse.Darq;

/// <summary>Log messages of storage fencing (event ids 4260-4269; the storage layer's own are 4260-4264).</summary>
internal static partial class DarqLog
{
    [LoggerMessage(EventId = 4265, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' is fenced: another instance took its storage over. Its background commit stops; dispose this instance.")]
    public static partial void CommitLoopFenced(ILogger logger, Exception exception, string darq);

    [LoggerMessage(EventId = 4266, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' could not write commit {CommitNum} to device '{Device}': another instance took the storage over (fenced); the commit is not retried.")]
    public static partial void CommitWriteFenced(ILogger logger, string darq, long commitNum, string device);

    [LoggerMessage(EventId = 4267, Level = LogLevel.Error,
        Message = "DARQ '{Darq}' is fenced: another instance took its storage over. Its delivery stops (that instance delivers the pending OUT messages); dispose this instance.")]
    public static partial void DeliveryLoopFenced(ILogger logger, Exception exception, string darq);
}
