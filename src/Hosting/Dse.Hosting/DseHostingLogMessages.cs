using Microsoft.Extensions.Logging;

namespace Dse.Hosting;

/// <summary>Source-generated log messages of DSE hosting; event ids 5000-5099 are stable.</summary>
internal static partial class DseHostingLogMessages
{
    [LoggerMessage(EventId = 5000, Level = LogLevel.Information, Message = "Connecting {Count} StateObject(s) to coordinator {Coordinator}")]
    public static partial void Connecting(ILogger logger, int count, string coordinator);

    [LoggerMessage(EventId = 5001, Level = LogLevel.Information, Message = "StateObject {ObjectId} connected to coordinator {Coordinator} after {Attempts} attempt(s)")]
    public static partial void Connected(ILogger logger, long objectId, string coordinator, int attempts);

    [LoggerMessage(EventId = 5002, Level = LogLevel.Warning, Message = "StateObject {ObjectId} could not connect to coordinator {Coordinator} (attempt {Attempt}): {Error}; retrying in {Delay}")]
    public static partial void ConnectRetrying(ILogger logger, long objectId, string coordinator, int attempt, string error, TimeSpan delay);

    [LoggerMessage(EventId = 5003, Level = LogLevel.Error, Message = "StateObject {ObjectId} cannot connect to coordinator {Coordinator}; it stays unusable until the host restarts")]
    public static partial void ConnectFailed(ILogger logger, long objectId, string coordinator, Exception exception);

    [LoggerMessage(EventId = 5004, Level = LogLevel.Information, Message = "All {Count} StateObject(s) are connected")]
    public static partial void Ready(ILogger logger, int count);

    [LoggerMessage(EventId = 5005, Level = LogLevel.Information, Message = "Stopping: persisting the outstanding versions of {Count} StateObject(s) and waiting at most {Timeout} for them to commit")]
    public static partial void Stopping(ILogger logger, int count, TimeSpan timeout);

    [LoggerMessage(EventId = 5006, Level = LogLevel.Information, Message = "StateObject {ObjectId}: version {Version} committed before shutdown")]
    public static partial void CommittedAtStop(ILogger logger, long objectId, long version);

    [LoggerMessage(EventId = 5007, Level = LogLevel.Warning, Message = "StateObject {ObjectId}: version {Version} was not committed within the shutdown timeout {Timeout}; the coordinator decides after the restart whether it survives")]
    public static partial void CommitTimedOut(ILogger logger, long objectId, long version, TimeSpan timeout);

    [LoggerMessage(EventId = 5008, Level = LogLevel.Warning, Message = "StateObject {ObjectId}: could not persist and commit version {Version} at shutdown")]
    public static partial void CommitFailedAtStop(ILogger logger, long objectId, long version, Exception exception);

    [LoggerMessage(EventId = 5009, Level = LogLevel.Warning, Message = "StateObject {ObjectId} failed to dispose")]
    public static partial void DisposeFailed(ILogger logger, long objectId, Exception exception);

    [LoggerMessage(EventId = 5010, Level = LogLevel.Warning, Message = "Serving plaintext HTTP/2 without TLS on {Endpoint}: plaintext is for loopback development only; serve TLS (UseDseTls) for anything else")]
    public static partial void ServingPlaintext(ILogger logger, string endpoint);

    [LoggerMessage(EventId = 5011, Level = LogLevel.Information, Message = "Serving TLS on {Endpoint} with certificate {Subject} (thumbprint {Thumbprint}, valid until {NotAfter:O})")]
    public static partial void ServingTls(ILogger logger, string endpoint, string subject, string thumbprint, DateTime notAfter);

    [LoggerMessage(EventId = 5012, Level = LogLevel.Information, Message = "Speculative gRPC services accept DSE headers only from authenticated participants: {Count} participant id(s) in {Path} (Dse:Participants)")]
    public static partial void HeadersAuthenticated(ILogger logger, int count, string path);

    [LoggerMessage(EventId = 5013, Level = LogLevel.Warning, Message = "Dse:AcceptUnauthenticatedHeaders is on: a DSE header from a caller that sends no credential is accepted, so anyone who can reach the services can make their StateObjects depend on versions it names")]
    public static partial void AcceptingUnauthenticatedHeaders(ILogger logger);
}
