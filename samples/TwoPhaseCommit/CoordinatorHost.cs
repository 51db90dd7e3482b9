using System.Net;
using Dse.Coordinator;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>The DSE coordinator process: the journaled coordinator served over gRPC, its log a file in the data directory.</summary>
internal static class CoordinatorHost
{
    /// <summary>The process mode.</summary>
    public const string Mode = "dse-coordinator";

    /// <summary>Builds and starts the coordinator; returns with the address it serves on.</summary>
    public static async Task<(WebApplication App, Uri Address)> StartAsync(ChildArguments args, CancellationToken cancellationToken)
    {
        string logPath = args.Get("log");
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [], ContentRootPath = AppContext.BaseDirectory });
        ServerHost.ConfigureLogging(builder.Logging, builder.Services);
        ListenOptions? endpoint = null;
        var tls = ClusterTls.FromArguments(args);
        builder.WebHost.ConfigureKestrel(kestrel =>
            kestrel.ListenDse(IPAddress.Loopback, (int)args.GetInt64("port"), tls?.CertificatePath, tls?.KeyPath, listen => endpoint = listen));
        builder.Services.AddDseCoordinator(
            sp => new FileCoordinatorLog(logPath, sp.GetRequiredService<ILoggerFactory>().CreateLogger<FileCoordinatorLog>()),
            options =>
            {
                // Every process starts on empty storage, so no cold start (ExpectedParticipants) is needed. A killed
                // participant comes back on its storage within seconds and must get a rollback decision, never be
                // removed for silence meanwhile.
                options.HeartbeatTimeout = TimeSpan.FromMinutes(2);
            });
        var app = builder.Build();
        app.MapDseCoordinator();
        await app.StartAsync(cancellationToken);
        var bound = (IPEndPoint)endpoint!.EndPoint;
        return (app, new Uri($"{(tls is null ? "http" : "https")}://127.0.0.1:{bound.Port}"));
    }
}
