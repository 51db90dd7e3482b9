using Microsoft.Extensions.Logging;

namespace Dse.Coordinator;

/// <summary>Options of a <see cref="CoordinatorServer"/>: the coordinator it opens and the gRPC service over it.</summary>
public sealed class CoordinatorServerOptions
{
    /// <summary>The default of <see cref="MaxMessageSize"/>: 64 MB.</summary>
    public const int DefaultMaxMessageSize = 64 * 1024 * 1024;

    /// <summary>
    /// How long the coordinator waits to hear from a participant before it removes it (see
    /// <see cref="ClusterCoordinatorOptions.HeartbeatTimeout"/>). Default 10 s; <c>null</c> never removes. Between
    /// 10 ms and 1 hour.
    /// </summary>
    public TimeSpan? HeartbeatTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>How many recent decisions the cluster state carries. Default 64; at least 1.</summary>
    public int MaxRetainedDecisions { get; set; } = 64;

    /// <summary>
    /// The participants of a whole-cluster cold start on an empty log (see
    /// <see cref="ClusterCoordinatorOptions.ExpectedParticipants"/>). Default <c>null</c>: no cold start.
    /// </summary>
    public IReadOnlyCollection<long>? ExpectedParticipants { get; set; }

    /// <summary>
    /// The server's cap on one WaitForChange long poll: it then answers with the current state even if nothing changed,
    /// so that no call outlives proxies' idle timeouts. A client may ask for less. Default 20 s; between 1 ms and
    /// 10 minutes.
    /// </summary>
    public TimeSpan LongPollTimeout { get; set; } = TimeSpan.FromSeconds(20);

    /// <summary>
    /// The largest request the service accepts and the largest answer it sends, in bytes. gRPC's default, 4 MB, is too
    /// small for a connect or resync listing after a long outage; a message over the limit fails with
    /// RESOURCE_EXHAUSTED, which <c>GrpcCoordinatorClient</c> reports as <see cref="CoordinatorErrorCode.InvalidRequest"/>
    /// (raise the client's <c>GrpcCoordinatorClientOptions.MaxMessageSize</c> too). Applies to the coordinator service
    /// only. Default 64 MB (<see cref="DefaultMaxMessageSize"/>); at least 1 KB.
    /// </summary>
    public int MaxMessageSize { get; set; } = DefaultMaxMessageSize;

    /// <summary>
    /// Whether the host stops (<see cref="Microsoft.Extensions.Hosting.IHostApplicationLifetime.StopApplication"/>) as
    /// soon as the coordinator stops serving because its journal failed or a newer coordinator fenced it out. A faulted
    /// coordinator refuses every request and, until it exits, keeps its log locked or leased, so a replacement cannot
    /// start; stopping lets a supervisor restart it. Default <c>false</c> (an embedding application decides; the
    /// coordinator host turns it on, see <c>--exit-on-fault</c>).
    /// </summary>
    public bool StopHostOnFault { get; set; }

    /// <summary>
    /// The participants file (<c>Dse.Grpc.DseCredentials</c>): each participant id and operator name with the SHA-256 hash
    /// of its bearer token. When set, every call needs <c>authorization: Bearer TOKEN</c> with a listed token
    /// (UNAUTHENTICATED otherwise); a call that names a participant (Connect, ReportPersisted, AcknowledgeRollback, Resync,
    /// Heartbeat) must carry that participant's token, and RemoveParticipant an operator's (PERMISSION_DENIED otherwise);
    /// GetState and WaitForChange answer any listed token. Read when the server opens; a file that does not parse fails the
    /// start naming the line. Default <c>null</c>: calls are not authenticated.
    /// </summary>
    public string? ParticipantsFile { get; set; }

    /// <summary>Clock for heartbeats and the long-poll cap. Default <see cref="TimeProvider.System"/>.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>Throws an <see cref="ArgumentException"/> naming the first invalid option.</summary>
    public void Validate()
    {
        if (LongPollTimeout < TimeSpan.FromMilliseconds(1) || LongPollTimeout > TimeSpan.FromMinutes(10))
        {
            throw new ArgumentException($"{nameof(CoordinatorServerOptions)}.{nameof(LongPollTimeout)} must be between 1 ms and 10 minutes (got {LongPollTimeout}).", nameof(LongPollTimeout));
        }

        if (MaxMessageSize < 1024)
        {
            throw new ArgumentException($"{nameof(CoordinatorServerOptions)}.{nameof(MaxMessageSize)} must be at least 1024 bytes (got {MaxMessageSize}).", nameof(MaxMessageSize));
        }

        if (ParticipantsFile is not null && !File.Exists(ParticipantsFile))
        {
            throw new ArgumentException($"{nameof(CoordinatorServerOptions)}.{nameof(ParticipantsFile)}: no file '{ParticipantsFile}'.", nameof(ParticipantsFile));
        }

        // The coordinator's own options name what is wrong with the rest.
        ToCoordinatorOptions(loggerFactory: null).Validate();
    }

    /// <summary>The options of the coordinator this server opens.</summary>
    internal ClusterCoordinatorOptions ToCoordinatorOptions(ILoggerFactory? loggerFactory) => new()
    {
        HeartbeatTimeout = HeartbeatTimeout,
        MaxRetainedDecisions = MaxRetainedDecisions,
        ExpectedParticipants = ExpectedParticipants,
        TimeProvider = TimeProvider,
        LoggerFactory = loggerFactory,
    };
}
