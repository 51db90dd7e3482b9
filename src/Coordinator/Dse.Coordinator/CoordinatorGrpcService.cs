using Dse.Grpc;
using Grpc.Core;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator;

/// <summary>
/// The gRPC service <c>dse.coordinator.v1.Coordinator</c> over a <see cref="CoordinatorServer"/>'s coordinator: checks
/// and maps each request (<see cref="ServerWire"/>), calls the coordinator, and turns its refusals into a status with
/// the <c>dse-error-code</c> trailer (<see cref="CoordinatorMethods.Refusal"/>). A refused request changes nothing.
/// With a participants file (<see cref="CoordinatorServer.Credentials"/>) every call is authenticated first
/// (UNAUTHENTICATED), and a call that names a participant, or removes one, is checked against the token's identity
/// (PERMISSION_DENIED) before the coordinator sees it.
/// </summary>
internal sealed class CoordinatorGrpcService
{
    private readonly ClusterCoordinator _coordinator;
    private readonly DseCredentials? _credentials;
    private readonly TimeSpan _longPollCap;
    private readonly TimeProvider _time;
    private readonly CancellationToken _stopping;
    private readonly ILogger _logger;

    public CoordinatorGrpcService(CoordinatorServer server, IHostApplicationLifetime lifetime, ILogger<CoordinatorGrpcService> logger)
    {
        _coordinator = server.Coordinator;
        _credentials = server.Credentials;
        _longPollCap = server.Options.LongPollTimeout;
        _time = server.Options.TimeProvider;
        _stopping = lifetime.ApplicationStopping;
        _logger = logger;
    }

    /// <summary>A connect can wait long (a cold start waits for every expected participant): it ends with the host.</summary>
    public Task<Wire.ConnectResponse> Connect(Wire.ConnectRequest request, ServerCallContext context) =>
        ServeAsync(nameof(Connect), request, context, static async (self, r, who, ct) =>
        {
            var connect = ServerWire.FromWire(r);
            self.Permit(nameof(Connect), who, connect.ObjectId);
            CoordinatorServiceMessages.Connecting(self._logger, connect.ObjectId, connect.PersistedVersions.Count);
            return ServerWire.ToWire(await self._coordinator.ConnectAsync(connect, ct).ConfigureAwait(false));
        }, endsWithHost: true);

    public Task<Wire.ReportPersistedResponse> ReportPersisted(Wire.ReportPersistedRequest request, ServerCallContext context) =>
        ServeAsync(nameof(ReportPersisted), request, context, static async (self, r, who, ct) =>
        {
            var (objectId, report) = ServerWire.FromWire(r);
            self.Permit(nameof(ReportPersisted), who, objectId);
            var outcome = await self._coordinator.ReportPersistedAsync(objectId, report, ct).ConfigureAwait(false);
            return new Wire.ReportPersistedResponse { Outcome = ServerWire.ToWire(outcome) };
        });

    public Task<Wire.AcknowledgeRollbackResponse> AcknowledgeRollback(Wire.AcknowledgeRollbackRequest request, ServerCallContext context) =>
        ServeAsync(nameof(AcknowledgeRollback), request, context, static async (self, r, who, ct) =>
        {
            var (objectId, worldLine, keptThrough) = ServerWire.FromWire(r);
            self.Permit(nameof(AcknowledgeRollback), who, objectId);
            await self._coordinator.AcknowledgeRollbackAsync(objectId, worldLine, keptThrough, ct).ConfigureAwait(false);
            return new Wire.AcknowledgeRollbackResponse();
        });

    public Task<Wire.ResyncResponse> Resync(Wire.ResyncRequest request, ServerCallContext context) =>
        ServeAsync(nameof(Resync), request, context, static async (self, r, who, ct) =>
        {
            var resync = ServerWire.FromWire(r);
            self.Permit(nameof(Resync), who, resync.ObjectId);
            return new Wire.ResyncResponse { State = ServerWire.ToWire(await self._coordinator.ResyncAsync(resync, ct).ConfigureAwait(false)) };
        });

    public Task<Wire.HeartbeatResponse> Heartbeat(Wire.HeartbeatRequest request, ServerCallContext context) =>
        ServeAsync(nameof(Heartbeat), request, context, static async (self, r, who, ct) =>
        {
            var (objectId, statistics) = ServerWire.FromWire(r);
            self.Permit(nameof(Heartbeat), who, objectId);
            if (statistics is null)
            {
                await self._coordinator.HeartbeatAsync(objectId, ct).ConfigureAwait(false);
            }
            else
            {
                await self._coordinator.HeartbeatAsync(objectId, statistics, ct).ConfigureAwait(false);
            }

            return new Wire.HeartbeatResponse();
        });

    public Task<Wire.GetStateResponse> GetState(Wire.GetStateRequest request, ServerCallContext context) =>
        ServeAsync(nameof(GetState), request, context, static async (self, r, who, ct) =>
            new Wire.GetStateResponse { State = ServerWire.ToWire(await self._coordinator.GetStateAsync(ct).ConfigureAwait(false)) });

    public Task<Wire.WaitForChangeResponse> WaitForChange(Wire.WaitForChangeRequest request, ServerCallContext context) =>
        ServeAsync(nameof(WaitForChange), request, context, static async (self, r, who, ct) =>
            new Wire.WaitForChangeResponse { State = ServerWire.ToWire(await self.LongPollAsync(r, ct).ConfigureAwait(false)) });

    /// <summary>Read-only: the coordinator's inspection, for dashboards and tools; any authenticated caller may ask.</summary>
    public Task<Wire.InspectResponse> Inspect(Wire.InspectRequest request, ServerCallContext context) =>
        ServeAsync(nameof(Inspect), request, context, static (self, r, who, ct) =>
        {
            int maxVersions = ServerWire.FromWire(r);
            ct.ThrowIfCancellationRequested();
            return Task.FromResult(InspectWire.ToWire(self._coordinator.Inspect(maxVersions)));
        });

    /// <summary>
    /// The operator's removal of a participant that is gone for good; logged at Warning with the caller. With a
    /// participants file only an operator's token may ask for it.
    /// </summary>
    public Task<Wire.RemoveParticipantResponse> RemoveParticipant(Wire.RemoveParticipantRequest request, ServerCallContext context)
        => ServeAsync(nameof(RemoveParticipant), request, context, static (self, r, who, ct) => self.RemoveAsync(r, who, ct));

    private async Task<Wire.RemoveParticipantResponse> RemoveAsync(Wire.RemoveParticipantRequest request, CallerIdentity who, CancellationToken cancellationToken)
    {
        long objectId = ServerWire.FromWire(request);
        if (who.Caller is { IsOperator: false } caller)
        {
            throw Denied(nameof(RemoveParticipant), who, $"RemoveParticipant is an operator action, and the token authenticates {caller}, not an operator (an 'operator NAME sha256:HEX' line of the participants file).");
        }

        string peer = who.Caller is null ? who.Peer : $"{who.Caller} at {who.Peer}";
        bool recovering = _coordinator.State.IsRecovering;
        bool removed = await _coordinator.RemoveParticipantAsync(objectId, cancellationToken).ConfigureAwait(false);
        if (removed)
        {
            CoordinatorServiceMessages.ParticipantRemoved(_logger, peer, objectId, recovering);
        }
        else
        {
            CoordinatorServiceMessages.ParticipantAlreadyRemoved(_logger, peer, objectId);
        }

        return new Wire.RemoveParticipantResponse { Removed = removed };
    }

    /// <summary>
    /// The state once its epoch passed the known one, or the current state once the wait (the client's wish, at most the
    /// cap) is over. A host that stops ends pending polls with Unavailable, so that clients back off instead of polling a
    /// server that is going away.
    /// </summary>
    private async Task<ClusterState> LongPollAsync(Wire.WaitForChangeRequest request, CancellationToken callCancelled)
    {
        var (knownEpoch, wait) = ServerWire.FromWire(request, _longPollCap);
        using var cap = new CancellationTokenSource(wait, _time);
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(callCancelled, cap.Token, _stopping);
        CoordinatorServiceMessages.LongPollWaiting(_logger, knownEpoch, wait);
        try
        {
            return await _coordinator.WaitForChangeAsync(knownEpoch, linked.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (!callCancelled.IsCancellationRequested)
        {
            if (_stopping.IsCancellationRequested)
            {
                throw new DseCoordinatorException(CoordinatorErrorCode.Unavailable, "The coordinator host is shutting down; poll again once it is back.");
            }

            CoordinatorServiceMessages.LongPollExpired(_logger, knownEpoch, wait);
            return await _coordinator.GetStateAsync(callCancelled).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Runs a handler and turns the coordinator's refusals into statuses. With <paramref name="endsWithHost"/> the call
    /// is also cancelled when the host stops, and then answered with Unavailable, so that a long wait does not hold the
    /// shutdown for its whole timeout.
    /// </summary>
    private async Task<TResponse> ServeAsync<TRequest, TResponse>(
        string method,
        TRequest request,
        ServerCallContext context,
        Func<CoordinatorGrpcService, TRequest, CallerIdentity, CancellationToken, Task<TResponse>> handler,
        bool endsWithHost = false)
    {
        var who = new CallerIdentity(Authenticate(method, context), context.Peer);
        var callCancelled = context.CancellationToken;
        using var linked = endsWithHost ? CancellationTokenSource.CreateLinkedTokenSource(callCancelled, _stopping) : null;
        try
        {
            return await handler(this, request, who, linked?.Token ?? callCancelled).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (endsWithHost && _stopping.IsCancellationRequested && !callCancelled.IsCancellationRequested)
        {
            string message = $"The coordinator host is shutting down; {method} was abandoned. Call again once it is back.";
            CoordinatorServiceMessages.RefusedRetryable(_logger, method, CoordinatorErrorCode.Unavailable, message);
            throw CoordinatorMethods.Refusal(CoordinatorErrorCode.Unavailable, message);
        }
        catch (DseCoordinatorException ex)
        {
            if (ex.Code is CoordinatorErrorCode.Unavailable or CoordinatorErrorCode.ResyncRequired)
            {
                CoordinatorServiceMessages.RefusedRetryable(_logger, method, ex.Code, ex.Message);
            }
            else
            {
                CoordinatorServiceMessages.Refused(_logger, method, ex.Code, ex.Message);
            }

            throw CoordinatorMethods.Refusal(ex.Code, ex.Message);
        }
    }

    /// <summary>
    /// The caller the call's token authenticates, or <c>null</c> when calls are not authenticated; UNAUTHENTICATED for
    /// a call without a listed token. Neither the refusal nor the log names the token.
    /// </summary>
    private DseCaller? Authenticate(string method, ServerCallContext context)
    {
        if (_credentials is null)
        {
            return null;
        }

        if (_credentials.Authenticate(context.RequestHeaders, out string reason) is { } caller)
        {
            return caller;
        }

        CoordinatorServiceMessages.Unauthenticated(_logger, method, context.Peer, reason);
        throw new RpcException(new Status(StatusCode.Unauthenticated, $"{method} refused: {reason}."));
    }

    /// <summary>PERMISSION_DENIED unless the caller speaks for <paramref name="objectId"/>: a participant speaks only for itself.</summary>
    private void Permit(string method, CallerIdentity who, long objectId)
    {
        if (who.Caller is { } caller && !caller.SpeaksFor(objectId))
        {
            throw Denied(method, who, $"{method} names participant {objectId}, and the token authenticates {caller}: a participant's token speaks for that participant only.");
        }
    }

    private RpcException Denied(string method, CallerIdentity who, string reason)
    {
        CoordinatorServiceMessages.PermissionDenied(_logger, method, who.Peer, reason);
        return new RpcException(new Status(StatusCode.PermissionDenied, reason));
    }

    /// <summary>Who made a call: the authenticated caller (<c>null</c> when calls are not authenticated) and its address.</summary>
    private readonly record struct CallerIdentity(DseCaller? Caller, string Peer);
}
