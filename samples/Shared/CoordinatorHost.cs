using Dse.Coordinator;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Samples.Shared;

/// <summary>The DSE coordinator process: the journaled coordinator served over gRPC, its log a file in the data directory.</summary>
internal static class CoordinatorHost
{
    /// <summary>The process mode.</summary>
    public const string Mode = "dse-coordinator";

    /// <summary>Builds and starts the coordinator (<c>--port</c>, <c>--log</c>); returns with the address it serves on.</summary>
    public static async Task<(WebApplication App, Uri Address)> StartAsync(ChildArguments args, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(args);
        string logPath = args.Get("log");
        var server = SampleServer.Create(args);
        server.Builder.Services.AddDseCoordinator(
            sp => new FileCoordinatorLog(logPath, sp.GetRequiredService<ILoggerFactory>().CreateLogger<FileCoordinatorLog>()),
            options =>
            {
                // Every process starts on empty storage, so no cold start (ExpectedParticipants) is needed. A killed
                // process comes back on its storage within seconds and must get a rollback decision, never be removed
                // for silence meanwhile.
                options.HeartbeatTimeout = TimeSpan.FromMinutes(2);
            });
        var app = server.Build();
        app.MapDseCoordinator();
        await app.StartAsync(cancellationToken);
        return (app, server.Address);
    }
}
