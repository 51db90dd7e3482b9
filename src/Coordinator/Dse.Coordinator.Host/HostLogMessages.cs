namespace Dse.Coordinator.Host;

/// <summary>Log messages of the host; event ids 3250-3259 of the coordinator's 3200-3299.</summary>
internal static partial class HostLogMessages
{
    [LoggerMessage(EventId = 3250, Level = LogLevel.Information, Message = "DSE coordinator listening on {Address} with log {Log}")]
    public static partial void Listening(ILogger logger, string address, string log);

    [LoggerMessage(EventId = 3253, Level = LogLevel.Information, Message = "DSE coordinator health on {Address} (HTTP/1.1)")]
    public static partial void ServingHealth(ILogger logger, string address);

    [LoggerMessage(EventId = 3257, Level = LogLevel.Information, Message = "DSE coordinator dashboard on {Address} (HTTP/1.1)")]
    public static partial void ServingDashboard(ILogger logger, string address);

    [LoggerMessage(EventId = 3254, Level = LogLevel.Warning, Message = "DSE coordinator serves plaintext HTTP/2 without TLS on {Address}: plaintext is for loopback development only; pass --tls-cert and --tls-key to serve TLS")]
    public static partial void Plaintext(ILogger logger, string address);

    [LoggerMessage(EventId = 3255, Level = LogLevel.Information, Message = "DSE coordinator serves TLS on {Address} with certificate {Subject} (thumbprint {Thumbprint}, valid until {NotAfter:O})")]
    public static partial void ServingTls(ILogger logger, string address, string subject, string thumbprint, DateTime notAfter);

    [LoggerMessage(EventId = 3256, Level = LogLevel.Warning, Message = "Calls to {Address} are not authenticated: anyone who can reach it may connect, report and remove participants; pass --participants PATH to require participant tokens")]
    public static partial void NotAuthenticated(ILogger logger, string address);

    [LoggerMessage(EventId = 3251, Level = LogLevel.Critical, Message = "The coordinator log {Log} is held by another coordinator; this host exits: {Reason}")]
    public static partial void Fenced(ILogger logger, string log, string reason);

    [LoggerMessage(EventId = 3252, Level = LogLevel.Critical, Message = "The coordinator could not start; this host exits")]
    public static partial void StartFailed(ILogger logger, Exception exception);
}
