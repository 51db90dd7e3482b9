using Microsoft.Extensions.Logging;

namespace Dse.Darq.Hosting;

/// <summary>Source-generated log messages of DARQ hosting; event ids are stable (4150-4199 of DARQ-over-gRPC's 4100-4199).</summary>
internal static partial class DarqHostingLogMessages
{
    [LoggerMessage(EventId = 4150, Level = LogLevel.Information, Message = "Opening {Count} DARQ(s): {Names}")]
    public static partial void Opening(ILogger logger, int count, string names);

    [LoggerMessage(EventId = 4151, Level = LogLevel.Information, Message = "DARQ '{Darq}' is open and served")]
    public static partial void Opened(ILogger logger, string darq);

    [LoggerMessage(EventId = 4152, Level = LogLevel.Information, Message = "DARQ '{Darq}' closed")]
    public static partial void Closed(ILogger logger, string darq);

    [LoggerMessage(EventId = 4153, Level = LogLevel.Warning, Message = "DARQ '{Darq}' failed to close cleanly")]
    public static partial void CloseFailed(ILogger logger, Exception exception, string darq);

    [LoggerMessage(EventId = 4154, Level = LogLevel.Information, Message = "OUT messages to '{Destination}' go to DARQ '{RemoteName}' at {Address}")]
    public static partial void RemoteDestination(ILogger logger, string destination, string remoteName, Uri address);
}
