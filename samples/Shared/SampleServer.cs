using System.Globalization;
using System.Net;
using Dse.Coordinator.Client;
using Dse.Hosting;
using Dse.Services;
using Dse.Storage;
using Grpc.AspNetCore.Server;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Console;

namespace Dse.Samples.Shared;

/// <summary>
/// The ASP.NET host of one server process of a sample: Kestrel on 127.0.0.1 at <c>--port</c> (0: a free one), TLS when
/// the launcher passed a certificate (<see cref="ClusterTls"/>), warnings and errors logged to standard error, and the
/// project's metrics served at <c>/metrics</c> on the same port (<c>AddDseTelemetry</c>, off with
/// <c>Dse__Telemetry__Enabled=false</c> in the launcher's environment, which every child inherits).
/// </summary>
internal sealed class SampleServer
{
    private readonly ChildArguments _args;

    // Set by Kestrel when it binds, which is during WebApplication.StartAsync.
    private ListenOptions? _endpoint;

    private SampleServer(ChildArguments args)
    {
        _args = args;
        Tls = ClusterTls.FromArguments(args);
        int port = (int)args.GetInt64("port");
        Builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [], ContentRootPath = AppContext.BaseDirectory });
        ConfigureLogging(Builder.Logging, Builder.Services);
        Builder.Services.AddDseTelemetry(Builder.Configuration);
        Builder.WebHost.ConfigureKestrel(kestrel =>
            kestrel.ListenDse(IPAddress.Loopback, port, Tls?.CertificatePath, Tls?.KeyPath, listen => _endpoint = listen));
    }

    /// <summary>The host's builder, with Kestrel and logging configured: add the services, then build.</summary>
    public WebApplicationBuilder Builder { get; }

    /// <summary>The TLS material the launcher passed, or <c>null</c> for plaintext.</summary>
    public ClusterTls? Tls { get; }

    /// <summary>The address the started host serves on, with the port Kestrel bound.</summary>
    /// <exception cref="InvalidOperationException">The host has not started yet.</exception>
    public Uri Address => _endpoint?.EndPoint is IPEndPoint bound
        ? new Uri(string.Create(CultureInfo.InvariantCulture, $"{(Tls is null ? "http" : "https")}://127.0.0.1:{bound.Port}"))
        : throw new InvalidOperationException("The server has not bound its port yet.");

    /// <summary>A host builder for the process given <paramref name="args"/> (<c>--port</c>, optional <c>--tls-*</c>).</summary>
    public static SampleServer Create(ChildArguments args)
    {
        ArgumentNullException.ThrowIfNull(args);
        return new SampleServer(args);
    }

    /// <summary>Builds the host with <c>/metrics</c> mapped: map the services on it, then start it.</summary>
    public WebApplication Build()
    {
        var app = Builder.Build();
        app.MapDseMetrics();
        return app;
    }

    /// <summary>Adds gRPC without message size limits (the samples' own processes are the only callers).</summary>
    public IGrpcServerBuilder AddGrpc() => Builder.Services.AddGrpc(options =>
    {
        options.MaxReceiveMessageSize = null;
        options.MaxSendMessageSize = null;
    });

    /// <summary>
    /// Adds the DSE runtime with the options the launcher passed (<c>--id</c>, <c>--group-commit-ms</c>,
    /// <c>--speculative</c>), connected to the DSE coordinator process at <c>--coordinator</c>; add the process's
    /// StateObject to the builder it returns.
    /// </summary>
    public IDseBuilder AddDse() => Builder.Services
        .AddDse(options =>
        {
            options.ObjectId = _args.GetInt64("id");
            options.GroupCommitPeriod = TimeSpan.FromMilliseconds(_args.GetInt64("group-commit-ms"));
            options.Speculative = _args.GetBoolean("speculative");
            options.ShutdownTimeout = TimeSpan.FromSeconds(2);
        })
        .UseRemoteCoordinator(new Uri(_args.Get("coordinator")), new GrpcCoordinatorClientOptions { CertificateAuthorityPath = Tls?.AuthorityPath });

    /// <summary>
    /// The process's <see cref="SpeculativeLog"/> in <paramref name="data"/> (<c>wal/</c> and <c>commits/</c>), owning its
    /// storage: the StateObject a log-backed server registers with <c>AddStateObject</c>.
    /// </summary>
    public static SpeculativeLog CreateLog(DseOptions options, string data) => new(options, new SpeculativeLogOptions
    {
        LogDevice = DseDevices.CreateLocalFile(Path.Combine(data, "wal", "wal.log")),
        CommitDirectory = Path.Combine(data, "commits"),
        OwnsStorage = true,
    });

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
