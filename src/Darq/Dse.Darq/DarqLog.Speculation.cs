using Microsoft.Extensions.Logging;

namespace Dse.Darq;

/// <summary>Log messages of DARQ speculation; event ids 4300-4399.</summary>
internal static partial class DarqLog
{
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
