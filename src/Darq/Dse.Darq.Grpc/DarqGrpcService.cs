using System.Runtime.CompilerServices;
using Dse.Darq.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Dse.Darq.Grpc;

/// <summary>
/// <c>dse.darq.v1.DarqService</c>: remote producers, a remote processor and OUT delivery for the DARQs an
/// <see cref="IDarqResolver"/> hosts. Every refusal is a status naming what was wrong, and changes nothing
/// (protos/dse/darq/v1/darq.proto lists the codes). Map it with <c>endpoints.MapDarqService()</c>. The operator calls
/// (parked deliveries) answer only when <see cref="DarqGrpcServiceOptions.EnableOperatorCalls"/> is on.
/// </summary>
[BindServiceMethod(typeof(DarqServiceBinding), nameof(DarqServiceBinding.Bind))]
public sealed class DarqGrpcService : DarqService.DarqServiceBase
{
    private readonly IDarqResolver _resolver;
    private readonly ILogger _logger;
    private readonly CancellationToken _serverStopping;
    private readonly DarqGrpcServiceOptions _options;

    /// <summary>Creates the service over the DARQs a resolver finds.</summary>
    /// <param name="resolver">Finds DARQs by name.</param>
    /// <param name="logger">The service's logger.</param>
    /// <param name="lifetime">When given, processor streams end (UNAVAILABLE) as the host starts stopping, so they do not hold its shutdown.</param>
    /// <param name="options">The service's options; <see langword="null"/> for the defaults (operator calls disabled).</param>
    public DarqGrpcService(IDarqResolver resolver, ILogger<DarqGrpcService> logger, IHostApplicationLifetime? lifetime = null,
        IOptions<DarqGrpcServiceOptions>? options = null)
    {
        ArgumentNullException.ThrowIfNull(resolver);
        ArgumentNullException.ThrowIfNull(logger);
        _resolver = resolver;
        _logger = logger;
        _serverStopping = lifetime?.ApplicationStopping ?? CancellationToken.None;
        _options = options?.Value ?? new DarqGrpcServiceOptions();
    }

    /// <inheritdoc />
    public override Task<EnqueueReply> Enqueue(EnqueueRequest request, ServerCallContext context) => HandleAsync(nameof(Enqueue), request, request?.Darq, context,
        static async (call, darq, request, token) =>
        {
            if (!request.HasProducerId && request.SequenceNumber != 0)
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method,
                    $"sequence_number is {request.SequenceNumber} but no producer_id is set; a sequence number only means something with a producer id."));
            }

            var result = request.HasProducerId
                ? await darq.EnqueueAsync(request.ProducerId, request.SequenceNumber, request.Payload.Memory, token).ConfigureAwait(false)
                : await darq.EnqueueAsync(request.Payload.Memory, token).ConfigureAwait(false);
            if (request.WaitDurable)
            {
                // With a producer id a resend is deduplicated, so UNAVAILABLE ("retry") stays right; without, it is not.
                await (request.HasProducerId
                    ? darq.EnsureDurableAsync(result.DurableAt, token)
                    : call.EnsureAppendedDurableAsync(darq, "message", result.Lsn, result.DurableAt, token)).ConfigureAwait(false);
            }

            return new EnqueueReply { Lsn = result.Lsn, Duplicate = result.IsDuplicate, DurableAt = result.DurableAt };
        });

    /// <inheritdoc />
    public override async Task Register(RegisterRequest request, IServerStreamWriter<ProcessorEvent> responseStream, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(responseStream);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(Register);
        var darq = Resolve(method, request.Darq);
        using var ending = CancellationTokenSource.CreateLinkedTokenSource(context.CancellationToken, _serverStopping);
        var token = ending.Token;
        DarqProcessor processor;
        try
        {
            processor = await darq.RegisterProcessorAsync(token).ConfigureAwait(false);
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }

        DarqGrpcLogMessages.ProcessorRegistered(_logger, darq.Name, processor.Incarnation, context.Peer, processor.ReplayCount);
        var tag = new KeyValuePair<string, object?>("darq", darq.Name);
        DarqGrpcInstrumentation.ProcessorStreams.Add(1, tag);
        try
        {
            await responseStream.WriteAsync(new ProcessorEvent
            {
                Registration = new Registration { Incarnation = processor.Incarnation, ReplayCount = processor.ReplayCount, Instance = InstanceOf(darq) },
            }).ConfigureAwait(false);

            await foreach (var message in processor.ReadAllAsync(token).ConfigureAwait(false))
            {
                await responseStream.WriteAsync(new ProcessorEvent
                {
                    Message = new Message
                    {
                        Lsn = message.Lsn,
                        // The wire values are DarqMessageKind's.
                        Kind = (MessageKind)(int)message.Kind,
                        Payload = ByteString.CopyFrom(message.Payload.Span),
                        IsReplay = message.IsReplay,
                    },
                }).ConfigureAwait(false);
            }
        }
        catch (DarqStaleIncarnationException superseded)
        {
            DarqGrpcLogMessages.ProcessorStreamEnded(_logger, darq.Name, processor.Incarnation, "a newer processor registered");
            throw Refuse(method, DarqRpcErrors.ToRpcException(superseded, method, darq.Name)!);
        }
        catch (Exception e) when (context.CancellationToken.IsCancellationRequested && e is OperationCanceledException or IOException or InvalidOperationException)
        {
            // The client went away: stop reading; the registration stands until a newer one supersedes it.
            DarqGrpcLogMessages.ProcessorStreamEnded(_logger, darq.Name, processor.Incarnation, "the client cancelled");
            return;
        }
        catch (OperationCanceledException) when (_serverStopping.IsCancellationRequested)
        {
            DarqGrpcLogMessages.ProcessorStreamEnded(_logger, darq.Name, processor.Incarnation, "the server is stopping");
            throw DarqRpcErrors.Unavailable(method, $"the server hosting DARQ '{darq.Name}' is stopping; register again with it or its successor.");
        }
        finally
        {
            DarqGrpcInstrumentation.ProcessorStreams.Add(-1, tag);
        }

        // The message stream completes without an error only when the DARQ closes.
        DarqGrpcLogMessages.ProcessorStreamEnded(_logger, darq.Name, processor.Incarnation, "the DARQ closed");
        throw DarqRpcErrors.Unavailable(method, $"DARQ '{darq.Name}' closed; register again once it is back.");
    }

    /// <inheritdoc />
    public override Task<StepReply> Step(StepRequest request, ServerCallContext context) => HandleAsync(nameof(Step), request, request?.Darq, context,
        static async (call, darq, request, token) =>
        {
            var result = await darq.StepAsync(request.Incarnation, ToStep(call, request), token).ConfigureAwait(false);
            if (request.WaitDurable)
            {
                await call.EnsureAppendedDurableAsync(darq, "step", result.CompletionLsn, result.DurableAt, token).ConfigureAwait(false);
            }

            var reply = new StepReply { CompletionLsn = result.CompletionLsn, DurableAt = result.DurableAt };
            reply.SelfLsns.Add(result.SelfLsns);
            reply.OutLsns.Add(result.OutLsns);
            return reply;
        });

    /// <inheritdoc />
    public override Task<DeliverReply> Deliver(DeliverRequest request, ServerCallContext context) => HandleAsync(nameof(Deliver), request, request?.Darq, context,
        static async (call, darq, request, token) =>
        {
            CheckSource(call, request.Source);
            if (request.SourceLsn < 0)
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method, $"source_lsn is {request.SourceLsn}; an LSN is never negative."));
            }

            if (!request.DseHeader.IsEmpty && CheckHeader(request.DseHeader) is { } malformed)
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method, $"dse_header is malformed ({malformed}); send the source's encoded DseHeader, or none."));
            }

            if (!request.DseHeader.IsEmpty && darq.DseStateObject is null)
            {
                // It would receive durably and keep the message whatever the source later rolls back.
                throw call.Refuse(DarqRpcErrors.FailedPrecondition(call.Method, darq.Name, DarqRpcErrors.NotSpeculative,
                    $"DARQ '{darq.Name}' does not speculate generally, so it cannot take a dse_header (it would not roll back with its source); " +
                    "deliver without one (GrpcDarqDestination.ReceivesSpeculatively false), once the source's step is recoverable."));
            }

            // The reply is the acknowledgement. Without a header: only once the message (or the original it duplicates) is
            // durable here (recoverable, under general speculation). With one: at once, the dependency travelling in the
            // reply's header instead.
            var delivery = new DarqDelivery(request.Source, request.SourceLsn, request.Darq, request.Payload.Memory) { DseHeader = request.DseHeader.Memory };
            var (result, header) = await darq.ReceiveForTransportAsync(delivery, token).ConfigureAwait(false);
            return new DeliverReply
            {
                Lsn = result.Lsn,
                Duplicate = result.IsDuplicate,
                DseHeader = header.IsEmpty ? ByteString.Empty : ByteString.CopyFrom(header.Span),
            };
        });

    /// <inheritdoc />
    public override Task<DeliverBatchReply> DeliverBatch(DeliverBatchRequest request, ServerCallContext context) => HandleAsync(nameof(DeliverBatch), request,
        request?.Darq, context, static async (call, darq, request, token) =>
        {
            CheckSource(call, request.Source);
            if (request.Messages.Count == 0)
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method, "messages is empty; a batch holds at least one message."));
            }

            long instance = InstanceOf(darq);
            if (request.AppendOnly && request.ExpectedInstance != 0 && request.ExpectedInstance != instance)
            {
                throw call.Refuse(DarqRpcErrors.InstanceChangedSince(call.Method, darq.Name, request.ExpectedInstance));
            }

            var deliveries = new DarqDelivery[request.Messages.Count];
            for (int i = 0; i < deliveries.Length; i++)
            {
                var message = request.Messages[i];
                deliveries[i] = new DarqDelivery(request.Source, message.SourceLsn, request.Darq, message.Payload.Memory);
            }

            // Checks every message (order, LSNs, sizes) before appending any. Append-only: the reply says what to await;
            // otherwise it is the batch's acknowledgement.
            var (results, durableAt) = await darq.ReceiveBatchAsync(deliveries, token).ConfigureAwait(false);
            var reply = new DeliverBatchReply();
            if (request.AppendOnly)
            {
                reply.DurableAt = durableAt;
                reply.Instance = instance;
            }
            else
            {
                await darq.EnsureDurableAsync(durableAt, token).ConfigureAwait(false);
            }

            foreach (var result in results)
            {
                reply.Lsns.Add(result.IsDuplicate ? -1 : result.Lsn);
            }

            return reply;
        });

    /// <inheritdoc />
    public override Task<CheckpointReply> Checkpoint(CheckpointRequest request, ServerCallContext context) => HandleAsync(nameof(Checkpoint), request,
        request?.Darq, context, static async (call, darq, request, token) =>
        {
            if (request.Replace.Count == 0)
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method,
                    "replace is empty; a checkpoint replaces at least one SELF message (to only add SELF messages, take a step)."));
            }

            var snapshot = new ReadOnlyMemory<byte>[request.Snapshot.Count];
            for (int i = 0; i < snapshot.Length; i++)
            {
                snapshot[i] = request.Snapshot[i].Memory;
            }

            var result = await darq.CheckpointAsync(request.Incarnation, [.. request.Replace], snapshot, token).ConfigureAwait(false);
            if (request.WaitDurable)
            {
                await call.EnsureAppendedDurableAsync(darq, "checkpoint", result.CheckpointLsn, result.DurableAt, token).ConfigureAwait(false);
            }

            var reply = new CheckpointReply { CheckpointLsn = result.CheckpointLsn, DurableAt = result.DurableAt };
            reply.ReplacedLsns.Add(result.ReplacedLsns);
            reply.SelfLsns.Add(result.SelfLsns);
            return reply;
        });

    /// <inheritdoc />
    public override Task<WaitForCommitReply> WaitForCommit(WaitForCommitRequest request, ServerCallContext context) => HandleAsync(nameof(WaitForCommit),
        request, request?.Darq, context, static async (call, darq, request, token) =>
        {
            if (request.Address < 0)
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method, $"address is {request.Address}; a log address is never negative."));
            }

            long instance = InstanceOf(darq);
            if (request.Instance != 0 && request.Instance != instance)
            {
                // Reopened since the processor registered (or the batch was appended): the address may be of something the
                // restart lost, and a commit of whatever now lies there must not acknowledge it. Steps of that processor
                // are refused the same way.
                DarqGrpcLogMessages.RestartedSinceRegistration(call.Service._logger, darq.Name, request.Address, request.Instance, instance, request.Incarnation);
                throw call.Refuse(DarqRpcErrors.InstanceGone(call.Method, darq.Name, request.Address, request.Instance, instance, request.Incarnation, darq.Incarnation));
            }

            if (request.Address > darq.TailAddress)
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method,
                    $"address {request.Address} is beyond the tail of DARQ '{darq.Name}' ({darq.TailAddress}); nothing there can be committed yet."));
            }

            await darq.EnsureDurableAsync(request.Address, token).ConfigureAwait(false);
            return new WaitForCommitReply { CommittedUntil = darq.CommittedUntilAddress };
        });

    /// <inheritdoc />
    public override Task<ListParkedDeliveriesReply> ListParkedDeliveries(ListParkedDeliveriesRequest request, ServerCallContext context) =>
        HandleOperatorCallAsync(nameof(ListParkedDeliveries), request, request?.Darq, context, static async (call, darq, request, token) =>
        {
            var reply = new ListParkedDeliveriesReply { PendingOutCount = darq.PendingOutCount };
            foreach (var parked in darq.ParkedDeliveries)
            {
                reply.Parked.Add(new ParkedDelivery
                {
                    Destination = parked.Destination,
                    Lsn = parked.Lsn,
                    Reason = parked.Reason,
                    ParkedAt = Google.Protobuf.WellKnownTypes.Timestamp.FromDateTimeOffset(parked.ParkedAt),
                    Refusals = parked.Refusals,

                    // The whole-DARQ count above does not tell which destination holds the messages up; this does.
                    PendingOutCount = await darq.PendingOutCountAsync(parked.Destination, token).ConfigureAwait(false),
                });
            }

            return reply;
        });

    /// <inheritdoc />
    public override Task<RetryParkedDeliveryReply> RetryParkedDelivery(RetryParkedDeliveryRequest request, ServerCallContext context) =>
        HandleOperatorCallAsync(nameof(RetryParkedDelivery), request, request?.Darq, context, static (call, darq, request, token) =>
        {
            if (string.IsNullOrEmpty(request.Destination))
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method, "destination is empty; name the parked destination to retry (ListParkedDeliveries lists them)."));
            }

            // Not parked (never, or retried meanwhile, by the automatic retry say) is not an error: nothing to do.
            bool retried = darq.RetryParkedDelivery(request.Destination);
            DarqGrpcLogMessages.OperatorRetriedParkedDelivery(call.Service._logger, darq.Name, request.Destination, retried, call.Context.Peer);
            return ValueTask.FromResult(new RetryParkedDeliveryReply { Retried = retried });
        });

    /// <inheritdoc />
    public override Task<DiscardOutReply> DiscardOut(DiscardOutRequest request, ServerCallContext context) =>
        HandleOperatorCallAsync(nameof(DiscardOut), request, request?.Darq, context, static async (call, darq, request, token) =>
        {
            if (request.Lsn < 0)
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method, $"lsn is {request.Lsn}; an LSN is never negative."));
            }

            if (!await darq.DiscardOutAsync(request.Lsn, token).ConfigureAwait(false))
            {
                throw call.Refuse(DarqRpcErrors.NotPendingOut(call.Method, darq.Name, request.Lsn));
            }

            DarqGrpcLogMessages.OperatorDiscardedOut(call.Service._logger, darq.Name, request.Lsn, call.Context.Peer);
            return new DiscardOutReply { CommittedUntil = darq.CommittedUntilAddress };
        });

    /// <inheritdoc />
    public override Task<RetireProducerReply> RetireProducer(RetireProducerRequest request, ServerCallContext context) =>
        HandleOperatorCallAsync(nameof(RetireProducer), request, request?.Darq, context, static async (call, darq, request, token) =>
        {
            bool retired = await darq.RetireProducerAsync(request.ProducerId, token).ConfigureAwait(false);

            // Logged before anything else can fail: the retirement stands whatever the reply does.
            DarqGrpcLogMessages.OperatorRetiredProducer(call.Service._logger, darq.Name, request.ProducerId, retired, call.Context.Peer);
            int count = await darq.ProducerCountAsync(CancellationToken.None).ConfigureAwait(false);
            return new RetireProducerReply { Retired = retired, ProducerCount = count };
        });

    /// <summary>
    /// Refuses an operator call unless <see cref="DarqGrpcServiceOptions.EnableOperatorCalls"/> is on (UNIMPLEMENTED) and
    /// <see cref="DarqGrpcServiceOptions.AuthorizeOperatorCall"/>, if set, allows it (PERMISSION_DENIED); before any DARQ is
    /// looked up, so a refused caller learns nothing about them.
    /// </summary>
    private async ValueTask AuthorizeOperatorCallAsync(string method, ServerCallContext context)
    {
        if (!_options.EnableOperatorCalls)
        {
            throw Refuse(method, DarqRpcErrors.OperatorCallsDisabled(method));
        }

        if (_options.AuthorizeOperatorCall is { } authorize && !await authorize(context).ConfigureAwait(false))
        {
            DarqGrpcLogMessages.OperatorCallDenied(_logger, method, context.Peer);
            throw Refuse(method, DarqRpcErrors.PermissionDenied(method, "the application's DarqGrpcServiceOptions.AuthorizeOperatorCall refused this caller."));
        }
    }

    /// <summary>The random, nonzero id of an open DARQ instance (a reopened DARQ is another instance, with another id).</summary>
    private static long InstanceOf(Darq darq) =>
        Instances.GetValue(darq, static _ => new StrongBox<long>(Random.Shared.NextInt64(1, long.MaxValue))).Value;

    private static readonly ConditionalWeakTable<Darq, StrongBox<long>> Instances = new();

    /// <summary>Why an encoded DSE header does not parse, or <see langword="null"/> when it does.</summary>
    private static string? CheckHeader(ByteString header) => DseHeader.TryParse(header.Span, out _, out string error) ? null : error;

    /// <summary>
    /// The one skeleton of every unary request: checks the arguments, finds the DARQ (refusing an empty or unknown name),
    /// runs <paramref name="handle"/>, and turns what it throws into the status the contract names (a refusal it raised
    /// itself passes as it is). Every refusal is logged and counted once.
    /// </summary>
    private Task<TReply> HandleAsync<TRequest, TReply>(string method, TRequest request, string? darqName, ServerCallContext context,
        Func<Call, Darq, TRequest, CancellationToken, ValueTask<TReply>> handle)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        var call = new Call(this, method, context);
        return RunAsync(call, Resolve(method, darqName), request, handle);

        static async Task<TReply> RunAsync(Call call, Darq darq, TRequest request, Func<Call, Darq, TRequest, CancellationToken, ValueTask<TReply>> handle)
        {
            // A wait (for a commit, for room) ends when the host starts stopping, so that no request holds its shutdown.
            using var ending = CancellationTokenSource.CreateLinkedTokenSource(call.Context.CancellationToken, call.Service._serverStopping);
            try
            {
                return await handle(call, darq, request, ending.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (call.ServerStopping)
            {
                throw call.Refuse(DarqRpcErrors.Unavailable(call.Method, $"the server hosting DARQ '{darq.Name}' is stopping; retry with it or its successor."));
            }
            catch (Exception e) when (DarqRpcErrors.ToRpcException(e, call.Method, darq.Name) is { } status)
            {
                throw call.Refuse(status);
            }
        }
    }

    /// <summary>As <see cref="HandleAsync"/>, for an operator call: refused before the DARQ is looked up unless enabled and authorized.</summary>
    private async Task<TReply> HandleOperatorCallAsync<TRequest, TReply>(string method, TRequest request, string? darqName, ServerCallContext context,
        Func<Call, Darq, TRequest, CancellationToken, ValueTask<TReply>> handle)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        await AuthorizeOperatorCallAsync(method, context).ConfigureAwait(false);
        return await HandleAsync(method, request, darqName, context, handle).ConfigureAwait(false);
    }

    /// <summary>A source name is the deduplication identity of a delivery: never empty.</summary>
    private static void CheckSource(Call call, string source)
    {
        if (string.IsNullOrEmpty(source))
        {
            throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method, "source is empty; a delivery names its source DARQ (its deduplication identity)."));
        }
    }

    /// <summary>The step a request describes; an invalid activity or destination is refused (INVALID_ARGUMENT) naming the field.</summary>
    private static DarqStep ToStep(Call call, StepRequest request)
    {
        var step = new DarqStep();
        foreach (long lsn in request.Consumed)
        {
            step.Consume(lsn);
        }

        for (int i = 0; i < request.SelfMessages.Count; i++)
        {
            var self = request.SelfMessages[i];
            if (self.Activity.Length == 0)
            {
                step.AddSelf(self.Payload.Memory);
                continue;
            }

            try
            {
                step.AddActivity(self.Activity, self.Payload.Memory);
            }
            catch (ArgumentException e)
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method, $"self_messages[{i}].activity: {e.Message}"));
            }
        }

        for (int i = 0; i < request.OutMessages.Count; i++)
        {
            var message = request.OutMessages[i];
            if (string.IsNullOrEmpty(message.Destination))
            {
                throw call.Refuse(DarqRpcErrors.InvalidArgument(call.Method, $"out_messages[{i}].destination is empty; an OUT message needs a destination DARQ name."));
            }

            step.AddOut(message.Destination, message.Payload.Memory);
        }

        return step;
    }

    private Darq Resolve(string method, string? name)
    {
        if (string.IsNullOrEmpty(name))
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method, "darq is empty; every request names the DARQ it is for."));
        }

        return _resolver.Resolve(name) ?? throw Refuse(method, DarqRpcErrors.UnknownDarq(method, name));
    }

    private RpcException Refuse(string method, RpcException status)
    {
        DarqGrpcLogMessages.Refused(_logger, method, status.StatusCode, status.Status.Detail);
        if (DarqGrpcInstrumentation.Refused.Enabled)
        {
            DarqGrpcInstrumentation.Refused.Add(1, new KeyValuePair<string, object?>("method", method), new KeyValuePair<string, object?>("code", status.StatusCode.ToString()));
        }

        return status;
    }

    /// <summary>One request being served: the service, the method (named in statuses and logs) and the call's context.</summary>
    private readonly record struct Call(DarqGrpcService Service, string Method, ServerCallContext Context)
    {
        /// <summary>Logs and counts a refusal, and returns it to throw.</summary>
        public RpcException Refuse(RpcException status) => Service.Refuse(Method, status);

        /// <summary>
        /// <see cref="Darq.EnsureDurableAsync"/> for a request that is appended already and would be appended again by a resend:
        /// a failure is ABORTED naming the appended entry (<see cref="DarqRpcErrors.NotDurable"/>), never UNAVAILABLE.
        /// </summary>
        public async ValueTask EnsureAppendedDurableAsync(Darq darq, string what, long lsn, long durableAt, CancellationToken cancellationToken)
        {
            try
            {
                await darq.EnsureDurableAsync(durableAt, cancellationToken).ConfigureAwait(false);
            }
            catch (Exception e) when (e is IOException or ObjectDisposedException or InvalidOperationException || (e is OperationCanceledException && ServerStopping))
            {
                throw Refuse(DarqRpcErrors.AppendedNotDurable(Method, darq.Name, what, lsn, durableAt, e));
            }
        }

        /// <summary>Whether the host is stopping while the caller still waits (a wait cancelled then was cancelled by the host).</summary>
        public bool ServerStopping => Service._serverStopping.IsCancellationRequested && !Context.CancellationToken.IsCancellationRequested;
    }
}
