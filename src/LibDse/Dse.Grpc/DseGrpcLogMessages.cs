using Microsoft.Extensions.Logging;

namespace Dse.Grpc;

/// <summary>Source-generated log messages of Dse.Grpc; event ids 1300-1399 are stable.</summary>
internal static partial class DseGrpcLogMessages
{
    [LoggerMessage(EventId = 1300, Level = LogLevel.Warning,
        Message = "{Method} was called with a DSE header but replied without one: the server has no DSE interceptor (or a manual handler that never ended its action), so it ran outside any action and nothing it did is tracked or rolled back with the caller. Logged once per method; dse.grpc.replies.without_header counts every such reply.")]
    public static partial void ReplyWithoutHeader(ILogger logger, string method);

    [LoggerMessage(EventId = 1301, Level = LogLevel.Information,
        Message = "{Method} from {Peer} refused a DSE header with Unauthenticated: {Reason}")]
    public static partial void HeaderUnauthenticated(ILogger logger, string method, string peer, string reason);

    [LoggerMessage(EventId = 1302, Level = LogLevel.Warning,
        Message = "{Method} from {Peer} refused a DSE header with PermissionDenied: {Reason}")]
    public static partial void HeaderPermissionDenied(ILogger logger, string method, string peer, string reason);
}
