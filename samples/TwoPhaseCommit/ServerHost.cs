using System.Net;
using Dse.Coordinator.Client;
using Dse.Services;
using Dse.Storage;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Console;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// A committer or participant process: an ASP.NET gRPC server on 127.0.0.1 (TLS when the launcher passes a
/// certificate, <see cref="ClusterTls"/>) whose services are made speculative by
/// the DSE interceptor on behalf of its <see cref="SpeculativeLog"/>, connected to the DSE coordinator process.
/// </summary>
internal static class ServerHost
{
    /// <summary>The process modes this host serves.</summary>
    public const string Participant = "participant";

    /// <summary>The commit coordinator's mode.</summary>
    public const string Committer = "committer";

    /// <summary>
    /// Builds and starts the server for <paramref name="mode"/>; returns once the log is connected (and, for a
    /// participant, its index rebuilt), with the address it serves on.
    /// </summary>
    public static async Task<(WebApplication App, Uri Address)> StartAsync(string mode, ChildArguments args, CancellationToken cancellationToken)
    {
        long id = args.GetInt64("id");
        string data = args.Get("data");
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [], ContentRootPath = AppContext.BaseDirectory });
        ConfigureLogging(builder.Logging, builder.Services);
        ListenOptions? endpoint = null;
        var tls = ClusterTls.FromArguments(args);
        builder.WebHost.ConfigureKestrel(kestrel =>
            kestrel.ListenDse(IPAddress.Loopback, (int)args.GetInt64("port"), tls?.CertificatePath, tls?.KeyPath, listen => endpoint = listen));

        builder.Services.AddGrpc(options =>
        {
            options.MaxReceiveMessageSize = null;
            options.MaxSendMessageSize = null;
        });
        builder.Services.AddDse(options =>
            {
                options.ObjectId = id;
                options.GroupCommitPeriod = TimeSpan.FromMilliseconds(args.GetInt64("group-commit-ms"));
                options.Speculative = args.GetBoolean("speculative");
                options.ShutdownTimeout = TimeSpan.FromSeconds(2);
            })
            .UseRemoteCoordinator(new Uri(args.Get("coordinator")), new GrpcCoordinatorClientOptions { CertificateAuthorityPath = tls?.AuthorityPath })
            .AddStateObject((_, options) => new SpeculativeLog(options, new SpeculativeLogOptions
            {
                LogDevice = DseDevices.CreateLocalFile(Path.Combine(data, "wal", "wal.log")),
                CommitDirectory = Path.Combine(data, "commits"),
                OwnsStorage = true,
            }))
            .AddGrpcInterceptors<SpeculativeLog>();

        if (mode == Participant)
        {
            builder.Services.AddSingleton<ParticipantIndex>();
        }
        else
        {
            var addresses = args.Get("participants").Split(',').Select(a => new Uri(a)).ToArray();
            builder.Services.AddSingleton(sp => new ParticipantClients(addresses, tls?.LoadAuthority(), sp.GetRequiredService<Dse.Grpc.DseClientInterceptor>()));
            builder.Services.AddSingleton<InFlightCommits>();
        }

        var app = builder.Build();
        if (mode == Participant)
        {
            app.MapGrpcService<ParticipantService>();
        }
        else
        {
            app.MapGrpcService<CommitterService>();
        }

        await app.StartAsync(cancellationToken);
        await app.Services.GetRequiredService<Dse.Hosting.IDseReadiness>().WhenReadyAsync(cancellationToken);
        if (mode == Participant)
        {
            await app.Services.GetRequiredService<ParticipantIndex>().RebuildAsync(app.Services.GetRequiredService<SpeculativeLog>(), cancellationToken);
        }

        var bound = (IPEndPoint)endpoint!.EndPoint;
        return (app, new Uri($"{(tls is null ? "http" : "https")}://127.0.0.1:{bound.Port}"));
    }

    /// <summary>Warnings and errors to standard error, which the launcher keeps in a file; standard output is the launcher's.</summary>
    public static void ConfigureLogging(ILoggingBuilder logging, IServiceCollection services)
    {
        logging.ClearProviders();
        logging.AddSimpleConsole(o =>
        {
            o.SingleLine = true;
            o.UseUtcTimestamp = true;
            o.TimestampFormat = "HH:mm:ss.fff ";
        });
        logging.SetMinimumLevel(LogLevel.Warning);
        services.Configure<ConsoleLoggerOptions>(o => o.LogToStandardErrorThreshold = LogLevel.Trace);
    }
}
