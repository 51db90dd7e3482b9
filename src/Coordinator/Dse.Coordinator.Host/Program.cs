using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using Azure.Storage.Blobs;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Microsoft.Extensions.Logging.Console;

namespace Dse.Coordinator.Host;

/// <summary>The coordinator host: parses the command line, serves the coordinator, prints where it listens.</summary>
internal static class Program
{
    public const int ExitOk = 0;
    public const int ExitFailed = 1;
    public const int ExitUsage = 2;
    public const int ExitFenced = 3;
    public const int ExitFaulted = 5;

    /// <summary>The line tests and scripts wait for; the address follows it.</summary>
    public const string ListeningAnnouncement = "DSE coordinator listening on ";

    /// <summary>The line that follows it with <c>--health-port</c>.</summary>
    public const string HealthAnnouncement = "DSE coordinator health on ";

    /// <summary>The line that follows them with <c>--dashboard-port</c>; the dashboard's address follows it.</summary>
    public const string DashboardAnnouncement = "DSE coordinator dashboard on ";

    /// <summary>Where the host mounts the dashboard.</summary>
    public const string DashboardPath = "/dashboard";

    /// <summary>What a host without TLS says at start.</summary>
    public static string PlaintextWarning(string address) =>
        $"serving plaintext HTTP/2 without TLS on {address}: plaintext is for loopback development only; pass --tls-cert and --tls-key to serve TLS.";

    /// <summary>What a host without a participants file says at start.</summary>
    public static string NotAuthenticatedWarning(string address) =>
        $"calls to {address} are not authenticated: anyone who can reach it may connect, report and remove participants; pass --participants PATH to require participant tokens.";

    public static async Task<int> Main(string[] args)
    {
        if (args is [TokenCommand.Name, ..])
        {
            return await TokenCommand.RunAsync(args[1..]);
        }

        if (args is [RemoveCommand.Name, ..])
        {
            return await RemoveCommand.RunAsync(args[1..]);
        }

        HostArguments arguments;
        try
        {
            arguments = HostArguments.Parse(args, Environment.GetEnvironmentVariable);
        }
        catch (HostArgumentException ex)
        {
            await Console.Error.WriteLineAsync($"error: {ex.Message}{Environment.NewLine}{Environment.NewLine}{HostArguments.Usage}");
            return ExitUsage;
        }

        if (arguments.ShowHelp)
        {
            await Console.Out.WriteAsync(HostArguments.Usage);
            return ExitOk;
        }

        BlobContainerClient? container = null;
        if (arguments.Log.IsBlob)
        {
            try
            {
                container = new BlobContainerClient(arguments.BlobConnectionString, arguments.Log.Container);
            }
            catch (Exception ex) when (ex is FormatException or ArgumentException)
            {
                // Never echo the connection string: it carries the account key.
                await Console.Error.WriteLineAsync($"error: the blob connection string is not valid ({ex.GetType().Name}).");
                return ExitUsage;
            }
        }

        X509Certificate2? certificate = null;
        X509Certificate2Collection? intermediates = null;
        if (arguments.UsesTls)
        {
            try
            {
                (certificate, intermediates) = LoadCertificate(arguments.TlsCertificatePath!, arguments.TlsKeyPath!);
            }
            catch (Exception ex) when (ex is CryptographicException or ArgumentException or IOException or UnauthorizedAccessException)
            {
                // Names the files only; their content (the key) is never echoed.
                await Console.Error.WriteLineAsync($"error: --tls-cert {arguments.TlsCertificatePath} with --tls-key {arguments.TlsKeyPath} is not a usable PEM certificate and private key: {ex.Message}");
                return ExitUsage;
            }
        }

        using var ownedCertificate = certificate;
        WebApplication built;
        (ListenOptions Grpc, ListenOptions? Health, ListenOptions? Dashboard) endpoints;
        try
        {
            built = Build(arguments, container, certificate, intermediates, out endpoints);
        }
        catch (HostArgumentException ex)
        {
            await Console.Error.WriteLineAsync($"error: {ex.Message}");
            return ExitUsage;
        }

        await using var app = built;
        var logger = app.Services.GetRequiredService<ILoggerFactory>().CreateLogger("Dse.Coordinator.Host");
        try
        {
            await app.StartAsync();
        }
        catch (CoordinatorLogFencedException ex)
        {
            HostLogMessages.Fenced(logger, arguments.Log.ToString(), ex.Message);
            await Console.Error.WriteLineAsync($"error: the coordinator log {arguments.Log} is held by another coordinator: {ex.Message}");
            return ExitFenced;
        }
        catch (Exception ex)
        {
            HostLogMessages.StartFailed(logger, ex);
            await Console.Error.WriteLineAsync($"error: the coordinator could not start: {ex.Message}");
            return ExitFailed;
        }

        // Kestrel wrote the bound ports (for port 0) back into the endpoints.
        string address = Address(endpoints.Grpc, certificate is not null);
        if (certificate is null)
        {
            // Printed as well as logged, so that it shows whatever the log level and is on standard error before the
            // listening line reaches standard output.
            HostLogMessages.Plaintext(logger, address);
            await Console.Error.WriteLineAsync($"warning: {PlaintextWarning(address)}");
        }
        else
        {
            HostLogMessages.ServingTls(logger, address, certificate.Subject, certificate.Thumbprint, certificate.NotAfter.ToUniversalTime());
        }

        if (arguments.ParticipantsPath is null)
        {
            HostLogMessages.NotAuthenticated(logger, address);
            await Console.Error.WriteLineAsync($"warning: {NotAuthenticatedWarning(address)}");
        }

        HostLogMessages.Listening(logger, address, arguments.Log.ToString());
        await Console.Out.WriteLineAsync(ListeningAnnouncement + address);
        if (endpoints.Health is { } health)
        {
            string healthAddress = Address(health, certificate is not null) + "/healthz";
            HostLogMessages.ServingHealth(logger, healthAddress);
            await Console.Out.WriteLineAsync(HealthAnnouncement + healthAddress);
        }

        if (endpoints.Dashboard is { } dashboard)
        {
            string dashboardAddress = Address(dashboard, certificate is not null) + DashboardPath + "/";
            HostLogMessages.ServingDashboard(logger, dashboardAddress);
            await Console.Out.WriteLineAsync(DashboardAnnouncement + dashboardAddress);
        }

        await Console.Out.FlushAsync();

        var coordinator = app.Services.GetRequiredService<CoordinatorServer>().Coordinator;
        await app.WaitForShutdownAsync();

        // Stopped because of a fault (--exit-on-fault), or stopped by a signal after one: a supervisor must see that.
        if (coordinator.Fault is { } fault)
        {
            await Console.Error.WriteLineAsync($"error: the coordinator stopped serving ({fault.GetType().Name}: {fault.Message}); exiting with code {ExitFaulted}.");
            return ExitFaulted;
        }

        return ExitOk;
    }

    private static WebApplication Build(HostArguments arguments, BlobContainerClient? container, X509Certificate2? certificate, X509Certificate2Collection? intermediates, out (ListenOptions Grpc, ListenOptions? Health, ListenOptions? Dashboard) endpoints)
    {
        // No command-line configuration: the host's own flags are the whole command line.
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { Args = [], ContentRootPath = AppContext.BaseDirectory });

        builder.Logging.ClearProviders();
        if (arguments.JsonLogs)
        {
            builder.Logging.AddJsonConsole(o => o.UseUtcTimestamp = true);
        }
        else
        {
            builder.Logging.AddSimpleConsole(o =>
            {
                o.SingleLine = true;
                o.UseUtcTimestamp = true;
                o.TimestampFormat = "yyyy-MM-ddTHH:mm:ss.fffZ ";
            });
        }

        // Standard output carries only the announcements.
        builder.Services.Configure<ConsoleLoggerOptions>(o => o.LogToStandardErrorThreshold = LogLevel.Trace);
        builder.Logging.AddFilter("Microsoft.AspNetCore", LogLevel.Warning);
        builder.Logging.AddFilter("Grpc", LogLevel.Warning);

        // A failed start is reported once, by this host, with its exit code.
        builder.Logging.AddFilter("Microsoft.Extensions.Hosting", LogLevel.Critical);

        ListenOptions? grpc = null;
        ListenOptions? health = null;
        ListenOptions? dashboard = null;
        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            // Without TLS there is no protocol negotiation: an endpoint speaks HTTP/2 (prior knowledge) or HTTP/1.1,
            // not both. gRPC needs HTTP/2. With TLS, ALPN offers both, so /healthz also answers HTTP/1.1 probes.
            // HostArguments allows plaintext on loopback only.
            kestrel.Listen(arguments.Bind, arguments.Port, l =>
            {
                if (certificate is null)
                {
                    l.Protocols = HttpProtocols.Http2;
                }
                else
                {
                    l.Protocols = HttpProtocols.Http1AndHttp2;
                    l.UseHttps(Https(certificate, intermediates));
                }

                grpc = l;
            });
            if (arguments.HealthPort is { } healthPort)
            {
                kestrel.Listen(arguments.Bind, healthPort, l =>
                {
                    l.Protocols = HttpProtocols.Http1;
                    if (certificate is not null)
                    {
                        l.UseHttps(Https(certificate, intermediates));
                    }

                    health = l;
                });
            }

            if (arguments.DashboardPort is { } dashboardPort)
            {
                // Browsers speak HTTP/2 only over TLS; HTTP/1.1 carries the page and its event stream.
                kestrel.Listen(arguments.Bind, dashboardPort, l =>
                {
                    l.Protocols = certificate is null ? HttpProtocols.Http1 : HttpProtocols.Http1AndHttp2;
                    if (certificate is not null)
                    {
                        l.UseHttps(Https(certificate, intermediates));
                    }

                    dashboard = l;
                });
            }
        });

        builder.Services.AddDseCoordinator(
            services => CreateLog(arguments, container, services.GetRequiredService<ILoggerFactory>()),
            options =>
            {
                options.HeartbeatTimeout = arguments.HeartbeatTimeout;
                options.MaxRetainedDecisions = arguments.MaxRetainedDecisions;
                options.LongPollTimeout = arguments.LongPollTimeout;
                options.MaxMessageSize = arguments.MaxMessageSize;
                options.StopHostOnFault = arguments.ExitOnFault;
                options.ParticipantsFile = arguments.ParticipantsPath;
            });

        bool metrics = CoordinatorTelemetry.Add(builder.Services, builder.Configuration);

        var app = builder.Build();
        app.MapDseCoordinator();
        app.MapDseCoordinatorHealth();
        if (arguments.DashboardPort is not null)
        {
            app.MapDseDashboard(DashboardPath);
        }
        if (metrics)
        {
            app.MapPrometheusScrapingEndpoint(CoordinatorTelemetry.MetricsPath);
        }

        // ConfigureKestrel runs when the server is created.
        _ = app.Services.GetRequiredService<IServer>();
        endpoints = (grpc ?? throw new InvalidOperationException("Kestrel was not configured."), health, dashboard);
        return app;
    }

    /// <summary>An address a client on this machine can call: a wildcard bind (0.0.0.0, ::) is announced as loopback.</summary>
    private static string Address(ListenOptions endpoint, bool tls)
    {
        var bound = (IPEndPoint)endpoint.EndPoint;
        var address = bound.Address.Equals(IPAddress.Any) ? IPAddress.Loopback
            : bound.Address.Equals(IPAddress.IPv6Any) ? IPAddress.IPv6Loopback
            : bound.Address;
        string host = address.AddressFamily == AddressFamily.InterNetworkV6 ? $"[{address}]" : address.ToString();
        return $"{(tls ? "https" : "http")}://{host}:{bound.Port}";
    }

    private static HttpsConnectionAdapterOptions Https(X509Certificate2 certificate, X509Certificate2Collection? intermediates) => new()
    {
        ServerCertificate = certificate,
        ServerCertificateChain = intermediates is { Count: > 0 } ? intermediates : null,
    };

    /// <summary>
    /// The certificate and key from PEM files, usable by Kestrel's TLS on every platform, and the intermediates that
    /// follow the certificate in its file (sent to clients with it).
    /// </summary>
    /// <exception cref="CryptographicException">The files are not a PEM certificate and a private key.</exception>
    /// <exception cref="ArgumentException">The key does not match the certificate.</exception>
    private static (X509Certificate2 Certificate, X509Certificate2Collection Intermediates) LoadCertificate(string certificatePath, string keyPath)
    {
        var intermediates = new X509Certificate2Collection();
        intermediates.ImportFromPemFile(certificatePath);
        intermediates.RemoveAt(0);
        var pem = X509Certificate2.CreateFromPemFile(certificatePath, keyPath);
        if (!OperatingSystem.IsWindows())
        {
            return (pem, intermediates);
        }

        // SChannel (Windows) cannot use the ephemeral key of a PEM import; a PKCS#12 round trip gives it a stored one.
        using (pem)
        {
            return (X509CertificateLoader.LoadPkcs12(pem.Export(X509ContentType.Pkcs12), null), intermediates);
        }
    }

    private static ICoordinatorLog CreateLog(HostArguments arguments, BlobContainerClient? container, ILoggerFactory loggerFactory) =>
        container is not null
            ? new BlobCoordinatorLog(container, arguments.Log.BlobName!, loggerFactory.CreateLogger<BlobCoordinatorLog>())
            : new FileCoordinatorLog(arguments.Log.Path!, loggerFactory.CreateLogger<FileCoordinatorLog>());
}
