using System.Collections.Frozen;
using System.Security.Authentication;
using Duration = Google.Protobuf.WellKnownTypes.Duration;
using Grpc.Core;
using Grpc.Net.Client;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator.Client;

/// <summary>
/// An <see cref="IDseCoordinator"/> that calls a coordinator host over gRPC (protos/dse/coordinator/v1). Refusals
/// come back as the <see cref="DseCoordinatorException"/> the coordinator threw, with the same
/// <see cref="DseCoordinatorException.Code"/> and message. A failure without the coordinator's answer (it is
/// unreachable, the connection reset, a deadline passed) becomes <see cref="CoordinatorErrorCode.Unavailable"/> with the
/// <see cref="RpcException"/> as inner exception, which the runtime treats as an outage and retries; such a call may
/// still have taken effect on the coordinator (a deadline that passed while it journaled a connect). A message over the
/// size limit (<see cref="GrpcCoordinatorClientOptions.MaxMessageSize"/>, the host's <c>--max-message-size</c>) becomes
/// <see cref="CoordinatorErrorCode.InvalidRequest"/>: retrying cannot help.
/// </summary>
/// <remarks>
/// Thread-safe; one instance per coordinator address is enough for a process. Every call has the deadline
/// <see cref="GrpcCoordinatorClientOptions.CallTimeout"/>, but connect (<see cref="GrpcCoordinatorClientOptions.ConnectTimeout"/>,
/// as a cold start waits for every expected participant) and the long poll. <see cref="WaitForChangeAsync"/> polls: each call
/// waits on the server at most <see cref="GrpcCoordinatorClientOptions.LongPollWait"/> (or the server's cap) and the
/// client calls again until the epoch moves past the known one or the token is cancelled.
/// </remarks>
public sealed class GrpcCoordinatorClient : IDseCoordinator, IDisposable, IAsyncDisposable
{
    /// <summary>The response trailer that carries the <see cref="CoordinatorErrorCode"/> name of a refused request.</summary>
    public const string ErrorCodeTrailer = "dse-error-code";

    private static readonly FrozenDictionary<string, CoordinatorErrorCode> ErrorCodes =
        Enum.GetValues<CoordinatorErrorCode>().ToFrozenDictionary(code => code.ToString(), StringComparer.Ordinal);

    private readonly Wire.Coordinator.CoordinatorClient _client;
    private readonly GrpcChannel? _ownedChannel;
    private readonly TimeSpan _callTimeout;
    private readonly TimeSpan _connectTimeout;
    private readonly TimeSpan _longPollWait;
    private readonly Duration _longPollWaitOnWire;

    // The credential sent on every call (authorization: Bearer TOKEN), or null; never changed after construction.
    private readonly Metadata? _headers;

    // The limit of the client's own channel; null for a channel the caller passed in (its limits are its own).
    private readonly int? _maxMessageSize;

    /// <summary>Creates a client with its own channel to <paramref name="address"/> (for example http://127.0.0.1:5000).</summary>
    /// <param name="address">
    /// The coordinator host; http (HTTP/2 without TLS, for a host on loopback) or https (TLS; its certificate is checked
    /// against <see cref="GrpcCoordinatorClientOptions.CertificateAuthority"/> or the machine's trusted roots).
    /// </param>
    /// <param name="options">Timeouts, limits and trust; default <see cref="GrpcCoordinatorClientOptions"/>.</param>
    /// <exception cref="ArgumentException">
    /// The address is not an absolute http or https URI, an option is invalid, or a certificate authority is set for an
    /// http address.
    /// </exception>
    public GrpcCoordinatorClient(Uri address, GrpcCoordinatorClientOptions? options = null)
        : this(CreateChannel(address, Validated(options)), options, ownsChannel: true)
    {
    }

    /// <summary>Creates a client over an existing channel, which the caller keeps owning (and disposes).</summary>
    /// <param name="channel">A channel to the coordinator host, for example a <see cref="GrpcChannel"/>.</param>
    /// <param name="options">Timeouts; default <see cref="GrpcCoordinatorClientOptions"/>.</param>
    /// <exception cref="ArgumentException">An option is invalid.</exception>
    public GrpcCoordinatorClient(ChannelBase channel, GrpcCoordinatorClientOptions? options = null)
        : this(channel, options, ownsChannel: false)
    {
    }

    private GrpcCoordinatorClient(ChannelBase channel, GrpcCoordinatorClientOptions? options, bool ownsChannel)
    {
        ArgumentNullException.ThrowIfNull(channel);
        options = Validated(options);
        _client = new Wire.Coordinator.CoordinatorClient(channel);
        _ownedChannel = ownsChannel ? (GrpcChannel)channel : null;
        _callTimeout = options.CallTimeout;
        _connectTimeout = options.ConnectTimeout;
        _longPollWait = options.LongPollWait;
        _longPollWaitOnWire = Duration.FromTimeSpan(options.LongPollWait);
        _maxMessageSize = ownsChannel ? options.MaxMessageSize : null;
        _headers = options.ReadToken() is { } token ? new Metadata { { "authorization", "Bearer " + token } } : null;
        Target = channel.Target;
    }

    /// <summary>The coordinator this client calls, as the channel names it; used in error messages.</summary>
    public string Target { get; }

    /// <inheritdoc />
    public async ValueTask<ConnectResponse> ConnectAsync(ConnectRequest request, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(request);
        var wire = ClientWire.ToWire(request);
        var response = await CallAsync(static (c, r, o) => c.ConnectAsync(r, o), wire, nameof(ConnectAsync), _connectTimeout, cancellationToken).ConfigureAwait(false);
        return ClientWire.FromWire(response, Target);
    }

    /// <inheritdoc />
    public async ValueTask<ReportOutcome> ReportPersistedAsync(long objectId, VersionReport report, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(report);
        var wire = new Wire.ReportPersistedRequest { ObjectId = objectId, Report = ClientWire.ToWire(objectId, report) };
        var response = await CallAsync(static (c, r, o) => c.ReportPersistedAsync(r, o), wire, nameof(ReportPersistedAsync), _callTimeout, cancellationToken).ConfigureAwait(false);
        return ClientWire.FromWire(response.Outcome, Target);
    }

    /// <inheritdoc />
    public async ValueTask AcknowledgeRollbackAsync(long objectId, long worldLine, long keptThrough, CancellationToken cancellationToken = default)
    {
        var wire = new Wire.AcknowledgeRollbackRequest { ObjectId = objectId, WorldLine = worldLine, KeptThrough = keptThrough };
        await CallAsync(static (c, r, o) => c.AcknowledgeRollbackAsync(r, o), wire, nameof(AcknowledgeRollbackAsync), _callTimeout, cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc />
    public async ValueTask<ClusterState> ResyncAsync(ResyncRequest request, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(request);
        var wire = ClientWire.ToWire(request);
        var response = await CallAsync(static (c, r, o) => c.ResyncAsync(r, o), wire, nameof(ResyncAsync), _callTimeout, cancellationToken).ConfigureAwait(false);
        return ClientWire.FromWire(response.State, Target, "ResyncResponse.state");
    }

    /// <inheritdoc />
    public async ValueTask HeartbeatAsync(long objectId, CancellationToken cancellationToken = default)
    {
        var wire = new Wire.HeartbeatRequest { ObjectId = objectId };
        await CallAsync(static (c, r, o) => c.HeartbeatAsync(r, o), wire, nameof(HeartbeatAsync), _callTimeout, cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc />
    public async ValueTask HeartbeatAsync(long objectId, ParticipantStatistics statistics, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(statistics);
        var wire = new Wire.HeartbeatRequest { ObjectId = objectId, Statistics = Wire.StatisticsWire.ToWire(statistics) };
        await CallAsync(static (c, r, o) => c.HeartbeatAsync(r, o), wire, nameof(HeartbeatAsync), _callTimeout, cancellationToken).ConfigureAwait(false);
    }

    /// <inheritdoc />
    public async ValueTask<ClusterState> GetStateAsync(CancellationToken cancellationToken = default)
    {
        var response = await CallAsync(static (c, r, o) => c.GetStateAsync(r, o), new Wire.GetStateRequest(), nameof(GetStateAsync), _callTimeout, cancellationToken).ConfigureAwait(false);
        return ClientWire.FromWire(response.State, Target, "GetStateResponse.state");
    }

    /// <inheritdoc />
    /// <remarks>
    /// Long-polls: each call waits on the server at most <see cref="GrpcCoordinatorClientOptions.LongPollWait"/> (or
    /// the server's cap) and answers with the current state; the client calls again until the epoch moved past
    /// <paramref name="knownEpoch"/>. A failed poll throws; the caller decides whether to retry.
    /// </remarks>
    public async ValueTask<ClusterState> WaitForChangeAsync(long knownEpoch, CancellationToken cancellationToken = default)
    {
        var wire = new Wire.WaitForChangeRequest { KnownEpoch = knownEpoch, MaxWait = _longPollWaitOnWire };
        while (true)
        {
            var response = await CallAsync(static (c, r, o) => c.WaitForChangeAsync(r, o), wire, nameof(WaitForChangeAsync), _longPollWait + _callTimeout, cancellationToken).ConfigureAwait(false);
            var state = ClientWire.FromWire(response.State, Target, "WaitForChangeResponse.state");
            if (state.Epoch > knownEpoch)
            {
                return state;
            }

            // The server's wait ended without a change: poll again.
        }
    }

    /// <summary>
    /// An operator action, not part of <see cref="IDseCoordinator"/>: removes a participant that is gone for good, as
    /// <c>ClusterCoordinator.RemoveParticipantAsync</c> does in the coordinator. A decision rolls back whatever
    /// depends on its unreported state. While the coordinator recovers from its own restart, the removal also stands in
    /// for the participant's answer, so recovery can end without it; the operator then accepts that anything the
    /// removed participant exposed may not be reconstructible (docs/coordinator.md, "Why heartbeat timeouts do not end
    /// recovery"). The participant's later calls are refused with <see cref="CoordinatorErrorCode.Removed"/> until it
    /// connects again, which is a restart.
    /// </summary>
    /// <param name="objectId">The participant; non-negative.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>True if this call removed it, false if it was removed already.</returns>
    /// <exception cref="DseCoordinatorException"><see cref="CoordinatorErrorCode.UnknownParticipant"/> for an id that
    /// never connected; <see cref="CoordinatorErrorCode.Unavailable"/> if the coordinator cannot be reached or stopped
    /// serving.</exception>
    public async Task<bool> RemoveParticipantAsync(long objectId, CancellationToken cancellationToken = default)
    {
        var wire = new Wire.RemoveParticipantRequest { ObjectId = objectId };
        var response = await CallAsync(static (c, r, o) => c.RemoveParticipantAsync(r, o), wire, nameof(RemoveParticipantAsync), _callTimeout, cancellationToken).ConfigureAwait(false);
        return response.Removed;
    }

    /// <summary>
    /// Not part of <see cref="IDseCoordinator"/>, for dashboards and tools: the coordinator's view, every registered
    /// participant (removed ones included) with its liveness, versions and latest heartbeat statistics, and the
    /// retained decisions with what each participant lost (the coordinator's <c>Inspect</c>, over the wire).
    /// Read-only; with a participants file any listed token may ask.
    /// </summary>
    /// <param name="maxVersionsPerParticipant">How many of each participant's newest uncommitted versions to copy; 0 to 1024.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="maxVersionsPerParticipant"/> is outside 0 to 1024.</exception>
    /// <exception cref="DseCoordinatorException"><see cref="CoordinatorErrorCode.Unavailable"/> if the coordinator
    /// cannot be reached, stopped serving or answered with something malformed.</exception>
    public async Task<ClusterInspection> InspectAsync(int maxVersionsPerParticipant = 32, CancellationToken cancellationToken = default)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(maxVersionsPerParticipant);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(maxVersionsPerParticipant, InspectionWire.MaxVersionsPerParticipant);
        var wire = new Wire.InspectRequest { MaxVersionsPerParticipant = maxVersionsPerParticipant };
        var response = await CallAsync(static (c, r, o) => c.InspectAsync(r, o), wire, nameof(InspectAsync), _callTimeout, cancellationToken).ConfigureAwait(false);
        return InspectionWire.FromWire(response, Target);
    }

    /// <summary>Disposes the channel if this client created it.</summary>
    public void Dispose() => _ownedChannel?.Dispose();

    /// <summary>Disposes the channel if this client created it.</summary>
    public ValueTask DisposeAsync()
    {
        Dispose();
        return ValueTask.CompletedTask;
    }

    private static GrpcCoordinatorClientOptions Validated(GrpcCoordinatorClientOptions? options)
    {
        options ??= new GrpcCoordinatorClientOptions();
        options.Validate();
        return options;
    }

    private static GrpcChannel CreateChannel(Uri address, GrpcCoordinatorClientOptions options)
    {
        ArgumentNullException.ThrowIfNull(address);
        if (!address.IsAbsoluteUri || (address.Scheme != Uri.UriSchemeHttp && address.Scheme != Uri.UriSchemeHttps))
        {
            throw new ArgumentException($"The coordinator address must be an absolute http or https URI (got '{address}').", nameof(address));
        }

        var handler = new SocketsHttpHandler
        {
            EnableMultipleHttp2Connections = true,

            // Keep-alive pings find a connection that died under a pending long poll before its deadline does.
            KeepAlivePingDelay = TimeSpan.FromSeconds(30),
            KeepAlivePingTimeout = TimeSpan.FromSeconds(10),
            KeepAlivePingPolicy = HttpKeepAlivePingPolicy.WithActiveRequests,
        };
        if (options.CertificateAuthority is not null || options.CertificateAuthorityPath is not null)
        {
            if (address.Scheme != Uri.UriSchemeHttps)
            {
                throw new ArgumentException(
                    $"A certificate authority is set ({nameof(GrpcCoordinatorClientOptions)}.{nameof(GrpcCoordinatorClientOptions.CertificateAuthority)} or " +
                    $"{nameof(GrpcCoordinatorClientOptions.CertificateAuthorityPath)}), but the coordinator address '{address}' is not https.",
                    nameof(address));
            }

            var authority = options.CertificateAuthority ?? TrustedCertificateAuthority.LoadPem(options.CertificateAuthorityPath!);
            TrustedCertificateAuthority.Apply(handler, authority);
        }

        return GrpcChannel.ForAddress(address, new GrpcChannelOptions
        {
            HttpHandler = handler,
            DisposeHttpClient = true,

            // No ThrowOperationCanceledOnCancellation: a passed deadline must stay an RpcException (DEADLINE_EXCEEDED),
            // which becomes Unavailable, not a TaskCanceledException the runtime does not treat as an outage.

            // A listing after a long outage can exceed gRPC's default 4 MB.
            MaxSendMessageSize = options.MaxMessageSize,
            MaxReceiveMessageSize = options.MaxMessageSize,

            // A restarted coordinator waits for every participant's resync: find it within a fraction of a second
            // rather than after gRPC's default backoff (1 s growing to 120 s).
            InitialReconnectBackoff = TimeSpan.FromMilliseconds(100),
            MaxReconnectBackoff = TimeSpan.FromSeconds(2),
        });
    }

    private async Task<TResponse> CallAsync<TRequest, TResponse>(
        Func<Wire.Coordinator.CoordinatorClient, TRequest, CallOptions, AsyncUnaryCall<TResponse>> call,
        TRequest request,
        string method,
        TimeSpan timeout,
        CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        var options = new CallOptions(headers: _headers, deadline: DateTime.UtcNow + timeout, cancellationToken: cancellationToken);
        try
        {
            using var pending = call(_client, request, options);
            return await pending.ResponseAsync.ConfigureAwait(false);
        }
        catch (RpcException ex) when (ex.StatusCode == StatusCode.Cancelled && cancellationToken.IsCancellationRequested)
        {
            throw new OperationCanceledException($"The call {method} to the coordinator at {Target} was cancelled.", ex, cancellationToken);
        }
        catch (RpcException ex)
        {
            throw Translate(ex, method);
        }
        catch (OperationCanceledException ex) when (!cancellationToken.IsCancellationRequested)
        {
            // A caller-owned channel with ThrowOperationCanceledOnCancellation reports a passed deadline this way.
            throw new DseCoordinatorException(
                CoordinatorErrorCode.Unavailable,
                $"The coordinator at {Target} is unavailable: {method} did not complete before its deadline ({timeout}).",
                ex);
        }
    }

    /// <summary>A refusal with the coordinator's code and message, or an outage for anything that did not reach it.</summary>
    private DseCoordinatorException Translate(RpcException ex, string method)
    {
        string? name = ex.Trailers.GetValue(ErrorCodeTrailer);
        if (name is not null && ErrorCodes.TryGetValue(name, out var code))
        {
            return new DseCoordinatorException(code, ex.Status.Detail, ex);
        }

        if (ex.StatusCode is StatusCode.Unauthenticated or StatusCode.PermissionDenied)
        {
            // The coordinator refused the credential (its own refusals carry the trailer): the same call fails the same
            // way until the token is fixed, so it is not an outage.
            string fix = ex.StatusCode == StatusCode.Unauthenticated
                ? "Set GrpcCoordinatorClientOptions.Token or TokenPath (Dse:CoordinatorToken or Dse:CoordinatorTokenFile when hosted) to a token listed in the coordinator's participants file"
                : "Use the token listed for that participant in the coordinator's participants file (an operator's token to remove participants)";
            return new DseCoordinatorException(
                CoordinatorErrorCode.CredentialRefused,
                $"The coordinator at {Target} refused {method} with {ex.StatusCode}: {ex.Status.Detail} {fix}.",
                ex);
        }

        if (ex.StatusCode == StatusCode.ResourceExhausted)
        {
            // The coordinator never answers RESOURCE_EXHAUSTED itself: a request or answer went over a message size
            // limit (this client's or the server's), and the same call will fail the same way every time.
            string limit = _maxMessageSize is { } size ? $"{size} bytes" : "set on the channel passed to it";
            return new DseCoordinatorException(
                CoordinatorErrorCode.InvalidRequest,
                $"{method} to the coordinator at {Target} failed: a message is over the gRPC message size limit ({ex.Status.Detail}). " +
                $"This client's limit is GrpcCoordinatorClientOptions.MaxMessageSize ({limit}); the coordinator host's is --max-message-size " +
                "(CoordinatorServerOptions.MaxMessageSize); both default to 64 MB. Raise both to send or receive larger listings.",
                ex);
        }

        if (FindInner<AuthenticationException>(ex) is { } tls)
        {
            // Not an outage that goes away by itself, but kept as Unavailable: a fixed certificate or trust lets retries succeed.
            return new DseCoordinatorException(
                CoordinatorErrorCode.Unavailable,
                $"The coordinator at {Target} is unavailable: {method} failed because the TLS handshake failed ({tls.Message}). " +
                "Check that the coordinator's certificate names this address's host and chains to a trusted CA: " +
                "for a private CA, set GrpcCoordinatorClientOptions.CertificateAuthority or CertificateAuthorityPath (Dse:CoordinatorCa when hosted).",
                ex);
        }

        string detail = string.IsNullOrEmpty(ex.Status.Detail) ? string.Empty : $": {ex.Status.Detail}";
        return new DseCoordinatorException(
            CoordinatorErrorCode.Unavailable,
            $"The coordinator at {Target} is unavailable: {method} failed with {ex.StatusCode}{detail}.",
            ex);
    }

    /// <summary>The first <typeparamref name="T"/> among the causes gRPC recorded for a failed call.</summary>
    private static T? FindInner<T>(RpcException exception)
        where T : Exception
    {
        for (var current = exception.Status.DebugException ?? exception.InnerException; current is not null; current = current.InnerException)
        {
            if (current is T found)
            {
                return found;
            }
        }

        return null;
    }
}
