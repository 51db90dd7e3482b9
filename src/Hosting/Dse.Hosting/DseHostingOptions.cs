using Dse.Coordinator.Client;
using Microsoft.Extensions.Logging;

namespace Dse.Hosting;

/// <summary>
/// Options of the DSE runtime in a host, bound from the configuration section <see cref="SectionName"/> ("Dse") and
/// validated when the host starts; a bad value fails the start with a message naming its configuration key.
/// </summary>
public sealed class DseHostingOptions
{
    /// <summary>The configuration section the options are bound from: <c>Dse</c>.</summary>
    public const string SectionName = "Dse";

    /// <summary>The value of <see cref="Coordinator"/> that selects a coordinator inside this process.</summary>
    public const string InProcessCoordinator = "in-process";

    /// <summary>
    /// The cluster-unique id of the StateObject registered without an id of its own (the usual, single-object case).
    /// Required (non-negative) as soon as such a StateObject is registered; default -1 (unset).
    /// </summary>
    public long ObjectId { get; set; } = -1;

    /// <summary>How often each StateObject persists its version when anything changed (<see cref="DseOptions.GroupCommitPeriod"/>). Default 10 ms.</summary>
    public TimeSpan GroupCommitPeriod { get; set; } = TimeSpan.FromMilliseconds(10);

    /// <summary>Speculative mode (default <c>true</c>) or the non-speculative baseline (<see cref="DseOptions.Speculative"/>).</summary>
    public bool Speculative { get; set; } = true;

    /// <summary>How often each StateObject tells the coordinator it is alive (<see cref="DseOptions.HeartbeatPeriod"/>). Default 1 s.</summary>
    public TimeSpan HeartbeatPeriod { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>
    /// The coordinator: <c>in-process</c> (default; a <see cref="ClusterCoordinator"/> singleton owned by the host, for a
    /// single process or tests) or the absolute http or https URL of a coordinator host (for example
    /// <c>http://coordinator:5000</c>). Code can override it with <c>UseCoordinator</c>, <c>UseInProcessCoordinator</c>
    /// or <c>UseRemoteCoordinator</c>.
    /// </summary>
    public string Coordinator { get; set; } = InProcessCoordinator;

    /// <summary>
    /// A PEM file with the certificate authority that an https <see cref="Coordinator"/>'s certificate must chain to,
    /// and the only one trusted for it (<see cref="GrpcCoordinatorClientOptions.CertificateAuthorityPath"/>): a cluster
    /// can use a private CA without installing it machine-wide. Default <c>null</c>: the machine's trusted roots.
    /// Also applies to <c>UseRemoteCoordinator</c> when its client options set no CA.
    /// </summary>
    public string? CoordinatorCa { get; set; }

    /// <summary>
    /// The bearer token of this process's StateObjects, sent on every call to a remote <see cref="Coordinator"/> whose
    /// host has a participants file (<see cref="GrpcCoordinatorClientOptions.Token"/>). It must be listed there for the
    /// id of every StateObject registered here. Prefer <see cref="CoordinatorTokenFile"/> or a secret store over a
    /// configuration file. Never logged. Default <c>null</c>: no credential. Also applies to <c>UseRemoteCoordinator</c>
    /// when its client options carry no token.
    /// </summary>
    public string? CoordinatorToken { get; set; }

    /// <summary>
    /// A file whose first line is the bearer token (<see cref="GrpcCoordinatorClientOptions.TokenPath"/>); the same as
    /// <see cref="CoordinatorToken"/>, which it excludes. Default <c>null</c>.
    /// </summary>
    public string? CoordinatorTokenFile { get; set; }

    /// <summary>
    /// The participants file of this host's speculative gRPC services (the coordinator's format, read with
    /// <see cref="Dse.Grpc.DseCredentials"/>): with it, a call that carries a DSE header must carry a listed participant's
    /// bearer token, and an origin header must name a participant that token speaks for (UNAUTHENTICATED or
    /// PERMISSION_DENIED otherwise, before the handler runs). Calls without a header are not affected. Read and checked
    /// at start; its content is never logged. Default <c>null</c>: a header from any caller is accepted.
    /// </summary>
    public string? Participants { get; set; }

    /// <summary>
    /// With <see cref="Participants"/>, also accept a DSE header from a caller that sends no credential at all (a
    /// credential that is sent is still checked). Only valid with <see cref="Participants"/>. Default <c>false</c>.
    /// </summary>
    public bool AcceptUnauthenticatedHeaders { get; set; }

    /// <summary>
    /// The bearer token this process's outgoing DSE calls carry (the <see cref="Dse.Grpc.DseClientInterceptor"/> hosting
    /// registers sends it with every call that carries a header), so that a speculative service with a participants
    /// file accepts them. It must be listed there for the id of every StateObject whose handlers make such calls;
    /// usually the same token as <see cref="CoordinatorToken"/>. Never logged. Default <c>null</c>: no credential.
    /// </summary>
    public string? Token { get; set; }

    /// <summary>A file whose first line is <see cref="Token"/>, which it excludes; read at start. Default <c>null</c>.</summary>
    public string? TokenFile { get; set; }

    /// <summary>
    /// How long a graceful stop waits for the versions it persisted to commit before it disposes the StateObjects
    /// anyway (and logs a warning). The host's own shutdown timeout still applies. Default 10 s; between 0 (persist,
    /// do not wait) and 1 hour.
    /// </summary>
    public TimeSpan ShutdownTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// The longest pause between two connect attempts while the coordinator is unreachable at start: retries back off
    /// from 100 ms, doubling up to this. Default 5 s; between 100 ms and 10 minutes.
    /// </summary>
    public TimeSpan MaxConnectRetryDelay { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>
    /// The participants the <c>in-process</c> coordinator expects when the host starts: it answers none of them until
    /// all have connected and listed their storage, then restores each to the greatest consistent cut over everyone's
    /// stored versions (<see cref="ClusterCoordinatorOptions.ExpectedParticipants"/>), so that after a crash no
    /// StateObject resumes from a version that depends on state another one lost. Default <c>null</c>: the ids of the
    /// StateObjects registered with <c>AddStateObject</c>. When set, it must name every registered StateObject; name
    /// more ids when other participants of this process connect to the coordinator too. Only valid with the
    /// <c>in-process</c> coordinator: a coordinator host has its own setting, and a coordinator passed to
    /// <c>UseCoordinator</c> is configured by whoever built it.
    /// </summary>
    public IReadOnlyCollection<long>? ExpectedParticipants { get; set; }

    /// <summary>
    /// How long the reply of an intercepted gRPC call may wait at its barrier (for everything the call observed to
    /// become recoverable) once the handler has returned. A reply still waiting then fails with DEADLINE_EXCEEDED and a
    /// message naming the versions it waited for and why they have not committed. Default 30 s; between 10 ms and
    /// 1 hour, or <see cref="Timeout.InfiniteTimeSpan"/> (<c>-00:00:00.001</c>) to wait without bound.
    /// </summary>
    public TimeSpan BarrierTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>
    /// How long a version may take to commit before the health check reports its StateObject Unhealthy: when a probe
    /// finds versions that are not committed yet, the StateObject persists its current version and the check times
    /// how long that version takes to commit. Time while the coordinator does not answer or recovers from its own
    /// restart does not count. Default 30 s; between 100 ms and 1 hour, or <see cref="Timeout.InfiniteTimeSpan"/> to
    /// turn the check off.
    /// </summary>
    public TimeSpan CommitStallTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>The first pause between connect attempts; doubles up to <see cref="MaxConnectRetryDelay"/>.</summary>
    internal static TimeSpan FirstConnectRetryDelay { get; } = TimeSpan.FromMilliseconds(100);

    /// <summary>The configuration key of option <paramref name="name"/>, as validation messages name it.</summary>
    internal static string Key(string name) => $"{SectionName}:{name}";

    /// <summary>The runtime options of the StateObject with id <paramref name="objectId"/> (background tasks on).</summary>
    internal DseOptions ToDseOptions(long objectId, ILoggerFactory? loggerFactory, TimeProvider timeProvider) => new()
    {
        ObjectId = objectId,
        GroupCommitPeriod = GroupCommitPeriod,
        Speculative = Speculative,
        HeartbeatPeriod = HeartbeatPeriod,
        RunBackgroundTasks = true,
        TimeProvider = timeProvider,
        LoggerFactory = loggerFactory,
    };

    /// <summary>The remote coordinator's address, or <c>null</c> for <see cref="InProcessCoordinator"/>.</summary>
    /// <exception cref="ArgumentException">Neither; the message names <c>Dse:Coordinator</c>.</exception>
    internal Uri? ParseCoordinator()
    {
        string value = Coordinator?.Trim() ?? string.Empty;
        if (string.Equals(value, InProcessCoordinator, StringComparison.OrdinalIgnoreCase))
        {
            return null;
        }

        if (Uri.TryCreate(value, UriKind.Absolute, out var address) && (address.Scheme == Uri.UriSchemeHttp || address.Scheme == Uri.UriSchemeHttps))
        {
            return address;
        }

        throw new ArgumentException($"{Key(nameof(Coordinator))} must be \"{InProcessCoordinator}\" or the absolute http or https URL of a coordinator host (got \"{Coordinator}\").", nameof(Coordinator));
    }
}
