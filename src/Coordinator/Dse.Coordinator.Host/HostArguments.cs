using System.Globalization;
using System.Net;
using Dse.Grpc;

namespace Dse.Coordinator.Host;

/// <summary>The host's command line, parsed and checked; see <see cref="Usage"/>.</summary>
internal sealed class HostArguments
{
    /// <summary>The environment variable that supplies the blob connection string when the flag is absent.</summary>
    public const string BlobConnectionStringVariable = "DSE_BLOB_CONNECTION_STRING";

    public const string Usage = """
        Usage: dse-coordinator --port N --log LOG [options]
               dse-coordinator remove --coordinator URL --id N [--tls-ca PATH] [--token-file PATH]
               dse-coordinator token (--participant N | --operator NAME)

        (dse-coordinator is the .NET tool of package Dse.Coordinator.Host; from a clone, run
        dotnet run --project src/Coordinator/Dse.Coordinator.Host -- followed by the same arguments.)

        Serves a durable DSE coordinator over gRPC on one port: TLS (HTTPS, HTTP/2 and HTTP/1.1) with --tls-cert and
        --tls-key, otherwise HTTP/2 without TLS ("prior knowledge"), which is for loopback development only. Once
        listening it prints one line, "DSE coordinator listening on http(s)://ADDRESS:PORT", to standard output (and,
        with --health-port, a second one, "DSE coordinator health on http(s)://ADDRESS:PORT/healthz", and with
        --dashboard-port, "DSE coordinator dashboard on http(s)://ADDRESS:PORT/dashboard/"); logs go to standard error.

        Required:
          --port N                     TCP port, 0-65535; 0 picks a free port.
          --log LOG                    The coordinator log: file:PATH (a local file, locked while the host runs) or
                                       blob:CONTAINER/BLOBNAME (an Azure append blob, leased while the host runs).

        Options:
          --bind ADDRESS               IP address to listen on. Default 127.0.0.1. For a wildcard (0.0.0.0 or ::)
                                       the announced address is loopback (127.0.0.1 or [::1]), which works locally.
                                       Anything but a loopback address needs --tls-cert and --tls-key.
          --tls-cert PATH              Serve TLS with this PEM certificate (the server's, then any intermediates).
          --tls-key PATH               The certificate's private key, PEM (PKCS#8, RSA or EC); both or neither.
          --participants PATH          Require a bearer token on every call: a file with one line per participant,
                                       "participant ID sha256:HEX", and per operator, "operator NAME sha256:HEX"
                                       (make them with the token command). A participant may speak only for its own
                                       id; only an operator may remove participants. Default: calls are not
                                       authenticated (the host says so at start).
          --health-port N              Also serve GET /healthz over HTTP/1.1 on this port (0 picks a free one), for
                                       probes that cannot speak HTTP/2 without TLS; with TLS it serves HTTPS.
                                       Default: none.
          --dashboard-port N           Also serve the live dashboard (a web page at /dashboard/) over HTTP/1.1 on this
                                       port (0 picks a free one); with TLS it serves HTTPS. Read-only, except that an
                                       operator's token from --participants may remove participants. Default: none.
          --blob-connection-string S   Azure Storage connection string for a blob log. Default: the environment
                                       variable DSE_BLOB_CONNECTION_STRING.
          --heartbeat-timeout T        Remove a participant not heard from within T, or "off". Default 10s.
          --max-retained-decisions N   Recent rollback decisions the cluster state carries. Default 64.
          --long-poll-timeout T        Cap of one WaitForChange long poll. Default 20s.
          --max-message-size SIZE      Largest gRPC request or answer: bytes, or a number with KB, MB or GB (1024-based).
                                       Default 64MB. Clients need the same limit (GrpcCoordinatorClientOptions).
          --exit-on-fault on|off       Exit with code 5 once the coordinator stops serving (its journal failed, or a
                                       newer coordinator fenced it out), releasing the log for a restart by a
                                       supervisor. Default on; off keeps the faulted host running (health reports it).
          --log-format simple|json     Console log format. Default simple.
          -h, --help                   Print this help and exit.

        Durations: a number with ms, s, m or h (500ms, 10s, 2m), or hh:mm:ss.
        Health: grpc.health.v1.Health/Check and GET /healthz over HTTP/2 on --port (with TLS also over HTTP/1.1);
        GET /healthz over HTTP/1.1 on --health-port. /healthz answers 200 Healthy (serving), 200 Degraded (recovering) or 503 Unhealthy (stopped).
        Exit codes: 0 stopped cleanly, 1 failed to start or run, 2 invalid arguments, 3 the log is held by another
        coordinator, 5 the coordinator stopped serving (a fault; also when stopped by a signal after one).

        remove: an operator action against a running coordinator host. Removes participant N for good: a rollback
        decision drops whatever depends on its unreported state, and during the coordinator's recovery the removal
        stands in for its answer. Anything the participant exposed that the others cannot reconstruct may be lost
        (docs/coordinator.md, "Why heartbeat timeouts do not end recovery"). Exit codes: 0 removed, 1 removed
        already, 2 invalid arguments, 4 the coordinator is unreachable or refused (an unknown id, for instance).
          --coordinator URL            The coordinator host, for example http://127.0.0.1:5180 or https://coord:5180.
          --tls-ca PATH                For an https coordinator: trust only this PEM CA certificate for its
                                       certificate (default: the machine's trusted roots).
          --id N                       The participant id, 0 or more.
          --token-file PATH            A file whose first line is an operator's token, for a host with --participants.

        token: prints a new random token on the first line and, on the second, the line to add to the participants
        file (the token's SHA-256 hash; the file never holds the token). Give the token to that participant
        (GrpcCoordinatorClientOptions.Token or TokenPath, Dse:CoordinatorToken or Dse:CoordinatorTokenFile) or operator.
          --participant N              A token for participant N.
          --operator NAME              A token for an operator (letters, digits, '-', '_' and '.').

        """;

    public bool ShowHelp { get; private init; }

    public int Port { get; private init; }

    public IPAddress Bind { get; private init; } = IPAddress.Loopback;

    public int? HealthPort { get; private init; }

    /// <summary>The HTTP/1.1 port of the dashboard, or <c>null</c>: no dashboard.</summary>
    public int? DashboardPort { get; private init; }

    public CoordinatorLogLocation Log { get; private init; } = new(null, null, null);

    public string? BlobConnectionString { get; private init; }

    public TimeSpan? HeartbeatTimeout { get; private init; } = TimeSpan.FromSeconds(10);

    public int MaxRetainedDecisions { get; private init; } = 64;

    public TimeSpan LongPollTimeout { get; private init; } = TimeSpan.FromSeconds(20);

    public bool JsonLogs { get; private init; }

    public int MaxMessageSize { get; private init; } = CoordinatorServerOptions.DefaultMaxMessageSize;

    public bool ExitOnFault { get; private init; } = true;

    /// <summary>The PEM certificate to serve TLS with, or <c>null</c> for plaintext on loopback.</summary>
    public string? TlsCertificatePath { get; private init; }

    /// <summary>The PEM private key of <see cref="TlsCertificatePath"/>.</summary>
    public string? TlsKeyPath { get; private init; }

    /// <summary>The participants file that authenticates callers, or <c>null</c>: calls are not authenticated.</summary>
    public string? ParticipantsPath { get; private init; }

    /// <summary>Whether the host serves TLS.</summary>
    public bool UsesTls => TlsCertificatePath is not null;

    /// <summary>Parses <paramref name="args"/>; <paramref name="environment"/> reads environment variables.</summary>
    /// <exception cref="HostArgumentException">An argument is unknown, repeated, missing or invalid.</exception>
    public static HostArguments Parse(IReadOnlyList<string> args, Func<string, string?> environment)
    {
        var values = new Dictionary<string, string>(StringComparer.Ordinal);
        for (int i = 0; i < args.Count; i++)
        {
            string arg = args[i];
            if (arg is "-h" or "--help")
            {
                return new HostArguments { ShowHelp = true };
            }

            if (!arg.StartsWith("--", StringComparison.Ordinal))
            {
                throw new HostArgumentException($"Unexpected argument {Shown(arg)}.");
            }

            string name;
            string value;
            int equals = arg.IndexOf('=', StringComparison.Ordinal);
            if (equals > 0)
            {
                name = arg[..equals];
                value = arg[(equals + 1)..];
            }
            else
            {
                name = arg;
                if (i + 1 >= args.Count)
                {
                    throw new HostArgumentException($"{name} needs a value.");
                }

                value = args[++i];
            }

            if (name is not ("--port" or "--log" or "--bind" or "--health-port" or "--dashboard-port" or "--blob-connection-string" or "--heartbeat-timeout" or "--max-retained-decisions" or "--long-poll-timeout" or "--log-format" or "--max-message-size" or "--exit-on-fault" or "--tls-cert" or "--tls-key" or "--participants"))
            {
                throw new HostArgumentException($"Unknown option {Shown(name)}.");
            }

            if (!values.TryAdd(name, value))
            {
                throw new HostArgumentException($"{name} is given twice.");
            }
        }

        var log = CoordinatorLogLocation.Parse(Required(values, "--log"));
        string? connectionString = values.GetValueOrDefault("--blob-connection-string") ?? environment(BlobConnectionStringVariable);
        if (log.IsBlob && string.IsNullOrWhiteSpace(connectionString))
        {
            throw new HostArgumentException($"A blob log needs a connection string: pass --blob-connection-string or set {BlobConnectionStringVariable}.");
        }

        string? tlsCertificate = values.GetValueOrDefault("--tls-cert");
        string? tlsKey = values.GetValueOrDefault("--tls-key");
        if ((tlsCertificate is null) != (tlsKey is null))
        {
            throw new HostArgumentException($"TLS needs both --tls-cert PATH and --tls-key PATH (got only {(tlsCertificate is null ? "--tls-key" : "--tls-cert")}).");
        }

        foreach (var (flag, path) in new[] { ("--tls-cert", tlsCertificate), ("--tls-key", tlsKey) })
        {
            if (path is not null && !File.Exists(path))
            {
                throw new HostArgumentException($"{flag}: no file {Shown(path)}.");
            }
        }

        string? participants = values.GetValueOrDefault("--participants");
        if (participants is not null)
        {
            try
            {
                // Read now, so that a file that does not parse is a usage error naming the line.
                _ = DseCredentials.Load(participants);
            }
            catch (Exception ex) when (ex is InvalidDataException or IOException or UnauthorizedAccessException)
            {
                throw new HostArgumentException(ex is InvalidDataException
                    ? $"--participants: {ex.Message}"
                    : $"--participants: {Shown(participants)} cannot be read ({ex.GetType().Name}).");
            }
        }

        var parsed = new HostArguments
        {
            ParticipantsPath = participants,
            TlsCertificatePath = tlsCertificate,
            TlsKeyPath = tlsKey,
            Port = ParseInt(Required(values, "--port"), "--port", 0, IPEndPoint.MaxPort),
            Bind = values.TryGetValue("--bind", out string? bind) ? ParseAddress(bind) : IPAddress.Loopback,
            HealthPort = values.TryGetValue("--health-port", out string? healthPort) ? ParseInt(healthPort, "--health-port", 0, IPEndPoint.MaxPort) : null,
            DashboardPort = values.TryGetValue("--dashboard-port", out string? dashboardPort) ? ParseInt(dashboardPort, "--dashboard-port", 0, IPEndPoint.MaxPort) : null,
            Log = log,
            BlobConnectionString = log.IsBlob ? connectionString : null,
            HeartbeatTimeout = values.TryGetValue("--heartbeat-timeout", out string? heartbeat)
                ? heartbeat == "off" ? null : ParseDuration(heartbeat, "--heartbeat-timeout")
                : TimeSpan.FromSeconds(10),
            MaxRetainedDecisions = values.TryGetValue("--max-retained-decisions", out string? retained) ? ParseInt(retained, "--max-retained-decisions", 1, int.MaxValue) : 64,
            LongPollTimeout = values.TryGetValue("--long-poll-timeout", out string? poll) ? ParseDuration(poll, "--long-poll-timeout") : TimeSpan.FromSeconds(20),
            JsonLogs = values.TryGetValue("--log-format", out string? format) && format switch
            {
                "json" => true,
                "simple" => false,
                _ => throw new HostArgumentException($"--log-format must be simple or json (got {Shown(format)})."),
            },
            MaxMessageSize = values.TryGetValue("--max-message-size", out string? size) ? ParseSize(size, "--max-message-size") : CoordinatorServerOptions.DefaultMaxMessageSize,
            ExitOnFault = !values.TryGetValue("--exit-on-fault", out string? exitOnFault) || exitOnFault switch
            {
                "on" => true,
                "off" => false,
                _ => throw new HostArgumentException($"--exit-on-fault must be on or off (got {Shown(exitOnFault)})."),
            },
        };

        if (!parsed.UsesTls && !IPAddress.IsLoopback(parsed.Bind))
        {
            throw new HostArgumentException(
                $"--bind {parsed.Bind} is not a loopback address, and plaintext is for loopback development only: " +
                "pass --tls-cert PATH and --tls-key PATH (PEM) to serve TLS, or bind 127.0.0.1 or ::1.");
        }

        if (parsed.HealthPort is { } health && health != 0 && health == parsed.Port)
        {
            throw new HostArgumentException($"--health-port must differ from --port (both {health}).");
        }

        if (parsed.DashboardPort is { } dashboard && dashboard != 0 && (dashboard == parsed.Port || dashboard == parsed.HealthPort))
        {
            throw new HostArgumentException($"--dashboard-port must differ from --port and --health-port (got {dashboard} twice).");
        }

        // The options name their own limits.
        try
        {
            parsed.ToServerOptions().Validate();
        }
        catch (ArgumentException ex)
        {
            throw new HostArgumentException($"{OptionFlag(ex.ParamName)}: {ex.Message}");
        }

        return parsed;
    }

    public CoordinatorServerOptions ToServerOptions() => new()
    {
        HeartbeatTimeout = HeartbeatTimeout,
        MaxRetainedDecisions = MaxRetainedDecisions,
        LongPollTimeout = LongPollTimeout,
        MaxMessageSize = MaxMessageSize,
        StopHostOnFault = ExitOnFault,
        ParticipantsFile = ParticipantsPath,
    };

    /// <summary>
    /// An argument as an error message may show it: quoted, unless it could be a secret. A connection string
    /// (AccountKey=...;) passed by mistake must not reach logs or terminals, so anything with '=' or ';' is not shown.
    /// </summary>
    public static string Shown(string argument) =>
        argument.AsSpan().IndexOfAny('=', ';') >= 0 ? "(not shown: it may contain a secret)" : $"'{argument}'";

    private static string OptionFlag(string? option) => option switch
    {
        nameof(CoordinatorServerOptions.HeartbeatTimeout) => "--heartbeat-timeout",
        nameof(CoordinatorServerOptions.LongPollTimeout) => "--long-poll-timeout",
        nameof(CoordinatorServerOptions.MaxRetainedDecisions) => "--max-retained-decisions",
        nameof(CoordinatorServerOptions.MaxMessageSize) => "--max-message-size",
        _ => "options",
    };

    private static string Required(Dictionary<string, string> values, string name) =>
        values.TryGetValue(name, out string? value) ? value : throw new HostArgumentException($"{name} is required.");

    private static int ParseInt(string value, string name, int min, int max) =>
        int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out int result) && result >= min && result <= max
            ? result
            : throw new HostArgumentException($"{name} must be a whole number from {min} to {max} (got {Shown(value)}).");

    private static IPAddress ParseAddress(string value) =>
        IPAddress.TryParse(value, out var address)
            ? address
            : throw new HostArgumentException($"--bind must be an IP address such as 127.0.0.1 or ::1 (got {Shown(value)}).");

    /// <summary>A byte count, or a whole number with KB, MB or GB (1024-based): 65536, 512KB, 64MB.</summary>
    private static int ParseSize(string value, string name)
    {
        (string number, long unit) = value switch
        {
            _ when value.EndsWith("KB", StringComparison.OrdinalIgnoreCase) => (value[..^2], 1024L),
            _ when value.EndsWith("MB", StringComparison.OrdinalIgnoreCase) => (value[..^2], 1024L * 1024),
            _ when value.EndsWith("GB", StringComparison.OrdinalIgnoreCase) => (value[..^2], 1024L * 1024 * 1024),
            _ => (value, 1L),
        };
        if (long.TryParse(number, NumberStyles.None, CultureInfo.InvariantCulture, out long amount) && amount <= int.MaxValue / unit)
        {
            return (int)(amount * unit);
        }

        throw new HostArgumentException($"{name} must be a size such as 65536, 512KB or 64MB, below 2GB (got {Shown(value)}).");
    }

    /// <summary>500ms, 10s, 2m, 1h, 1.5s or hh:mm:ss.</summary>
    private static TimeSpan ParseDuration(string value, string name)
    {
        (string number, double unit) = value switch
        {
            _ when value.EndsWith("ms", StringComparison.Ordinal) => (value[..^2], 1.0),
            _ when value.EndsWith('s') => (value[..^1], 1000.0),
            _ when value.EndsWith('m') => (value[..^1], 60_000.0),
            _ when value.EndsWith('h') => (value[..^1], 3_600_000.0),
            _ => (string.Empty, 0.0),
        };
        if (unit > 0 && double.TryParse(number, NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture, out double amount) && amount * unit <= TimeSpan.MaxValue.TotalMilliseconds)
        {
            return TimeSpan.FromMilliseconds(amount * unit);
        }

        if (unit == 0 && TimeSpan.TryParseExact(value, "c", CultureInfo.InvariantCulture, out var span) && span >= TimeSpan.Zero)
        {
            return span;
        }

        throw new HostArgumentException($"{name} must be a duration such as 500ms, 10s or 2m (got {Shown(value)}).");
    }
}
