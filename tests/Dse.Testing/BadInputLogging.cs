using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Testing;

/// <summary>
/// How a server may log a request it refused as bad input: below Warning, and without a stack trace. gRPC logs such a
/// refusal itself, at Information, which a <see cref="LoopbackGrpcServer"/> records only after <see cref="Capture"/>.
/// </summary>
public static class BadInputLogging
{
    /// <summary>Records gRPC's own server events from Information on (the server otherwise records them from Warning).</summary>
    public static IServiceCollection Capture(IServiceCollection services) =>
        services.AddLogging(logging => logging.AddFilter("Grpc.AspNetCore.Server", LogLevel.Information));

    /// <summary>The entries that break the rule: anything at Warning or above, or an exception with a stack trace.</summary>
    public static List<LogEntry> Violations(LogCapture logs)
    {
        ArgumentNullException.ThrowIfNull(logs);
        return [.. logs.Entries.Where(e => e.Level >= LogLevel.Warning || e.Exception?.StackTrace is not null)];
    }

    /// <summary>Fails, listing them, if any entry breaks the rule.</summary>
    public static void AssertNone(LogCapture logs)
    {
        var violations = Violations(logs);
        Assert.True(violations.Count == 0, "Bad input was logged at Warning or above, or with a stack trace:" + Environment.NewLine + string.Join(Environment.NewLine, violations));
    }
}
