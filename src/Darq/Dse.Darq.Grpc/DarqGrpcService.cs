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
    public override async Task<EnqueueReply> Enqueue(EnqueueRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(Enqueue);
        var darq = Resolve(method, request.Darq);
        if (!request.HasProducerId && request.SequenceNumber != 0)
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method,
                $"sequence_number is {request.SequenceNumber} but no producer_id is set; a sequence number only means something with a producer id."));
        }

        try
        {
            var token = context.CancellationToken;
            var result = request.HasProducerId
                ? await darq.EnqueueAsync(request.ProducerId, request.SequenceNumber, request.Payload.Memory, token).ConfigureAwait(false)
                : await darq.EnqueueAsync(request.Payload.Memory, token).ConfigureAwait(false);
            if (request.WaitDurable)
            {
                // With a producer id a resend is deduplicated, so UNAVAILABLE ("retry") stays right; without, it is not.
                await (request.HasProducerId
                    ? darq.EnsureDurableAsync(result.DurableAt, token)
                    : EnsureAppendedDurableAsync(method, darq, "message", result.Lsn, result.DurableAt, token)).ConfigureAwait(false);
            }

            return new EnqueueReply { Lsn = result.Lsn, Duplicate = result.IsDuplicate, DurableAt = result.DurableAt };
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }
    }

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
    public override async Task<StepReply> Step(StepRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(Step);
        var darq = Resolve(method, request.Darq);
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
                throw Refuse(method, DarqRpcErrors.InvalidArgument(method, $"self_messages[{i}].activity: {e.Message}"));
            }
        }

        for (int i = 0; i < request.OutMessages.Count; i++)
        {
            var message = request.OutMessages[i];
            if (string.IsNullOrEmpty(message.Destination))
            {
                throw Refuse(method, DarqRpcErrors.InvalidArgument(method, $"out_messages[{i}].destination is empty; an OUT message needs a destination DARQ name."));
            }

            step.AddOut(message.Destination, message.Payload.Memory);
        }

        try
        {
            var token = context.CancellationToken;
            var result = await darq.StepAsync(request.Incarnation, step, token).ConfigureAwait(false);
            if (request.WaitDurable)
            {
                await EnsureAppendedDurableAsync(method, darq, "step", result.CompletionLsn, result.DurableAt, token).ConfigureAwait(false);
            }

            var reply = new StepReply { CompletionLsn = result.CompletionLsn, DurableAt = result.DurableAt };
            reply.SelfLsns.Add(result.SelfLsns);
            reply.OutLsns.Add(result.OutLsns);
            return reply;
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }
    }

    /// <inheritdoc />
    public override async Task<DeliverReply> Deliver(DeliverRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(Deliver);
        var darq = Resolve(method, request.Darq);
        if (string.IsNullOrEmpty(request.Source))
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method, "source is empty; a delivery names its source DARQ (its deduplication identity)."));
        }

        if (request.SourceLsn < 0)
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method, $"source_lsn is {request.SourceLsn}; an LSN is never negative."));
        }

        if (!request.DseHeader.IsEmpty && CheckHeader(request.DseHeader) is { } malformed)
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method, $"dse_header is malformed ({malformed}); send the source's encoded DseHeader, or none."));
        }

        if (!request.DseHeader.IsEmpty && darq.DseStateObject is null)
        {
            // It would receive durably and keep the message whatever the source later rolls back.
            throw Refuse(method, DarqRpcErrors.FailedPrecondition(method, darq.Name, DarqRpcErrors.NotSpeculative,
                $"DARQ '{darq.Name}' does not speculate generally, so it cannot take a dse_header (it would not roll back with its source); " +
                "deliver without one (GrpcDarqDestination.ReceivesSpeculatively false), once the source's step is recoverable."));
        }

        try
        {
            // The reply is the acknowledgement. Without a header: only once the message (or the original it duplicates)
            // is durable here (recoverable, under general speculation). With one: at once, the dependency travelling in
            // the reply's header instead.
            var delivery = new DarqDelivery(request.Source, request.SourceLsn, request.Darq, request.Payload.Memory) { DseHeader = request.DseHeader.Memory };
            var (result, header) = await darq.ReceiveForTransportAsync(delivery, context.CancellationToken).ConfigureAwait(false);
            return new DeliverReply
            {
                Lsn = result.Lsn,
                Duplicate = result.IsDuplicate,
                DseHeader = header.IsEmpty ? ByteString.Empty : ByteString.CopyFrom(header.Span),
            };
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }
    }

    /// <inheritdoc />
    public override async Task<DeliverBatchReply> DeliverBatch(DeliverBatchRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(DeliverBatch);
        var darq = Resolve(method, request.Darq);
        if (string.IsNullOrEmpty(request.Source))
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method, "source is empty; a delivery names its source DARQ (its deduplication identity)."));
        }

        if (request.Messages.Count == 0)
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method, "messages is empty; a batch holds at least one message."));
        }

        var deliveries = new DarqDelivery[request.Messages.Count];
        for (int i = 0; i < deliveries.Length; i++)
        {
            var message = request.Messages[i];
            deliveries[i] = new DarqDelivery(request.Source, message.SourceLsn, request.Darq, message.Payload.Memory);
        }

        try
        {
            // Checks every message (order, LSNs, sizes) before appending any; the reply is the batch's acknowledgement.
            var results = await darq.ReceiveBatchDurablyAsync(deliveries, context.CancellationToken).ConfigureAwait(false);
            var reply = new DeliverBatchReply();
            foreach (var result in results)
            {
                reply.Lsns.Add(result.IsDuplicate ? -1 : result.Lsn);
            }

            return reply;
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }
    }

    /// <inheritdoc />
    public override async Task<CheckpointReply> Checkpoint(CheckpointRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(Checkpoint);
        var darq = Resolve(method, request.Darq);
        if (request.Replace.Count == 0)
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method,
                "replace is empty; a checkpoint replaces at least one SELF message (to only add SELF messages, take a step)."));
        }

        var snapshot = new ReadOnlyMemory<byte>[request.Snapshot.Count];
        for (int i = 0; i < snapshot.Length; i++)
        {
            snapshot[i] = request.Snapshot[i].Memory;
        }

        try
        {
            var token = context.CancellationToken;
            var result = await darq.CheckpointAsync(request.Incarnation, [.. request.Replace], snapshot, token).ConfigureAwait(false);
            if (request.WaitDurable)
            {
                await EnsureAppendedDurableAsync(method, darq, "checkpoint", result.CheckpointLsn, result.DurableAt, token).ConfigureAwait(false);
            }

            var reply = new CheckpointReply { CheckpointLsn = result.CheckpointLsn, DurableAt = result.DurableAt };
            reply.ReplacedLsns.Add(result.ReplacedLsns);
            reply.SelfLsns.Add(result.SelfLsns);
            return reply;
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }
    }

    /// <inheritdoc />
    public override async Task<WaitForCommitReply> WaitForCommit(WaitForCommitRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(WaitForCommit);
        var darq = Resolve(method, request.Darq);
        if (request.Address < 0)
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method, $"address is {request.Address}; a log address is never negative."));
        }

        if (request.Instance != 0 && request.Instance != InstanceOf(darq))
        {
            // Reopened since the processor registered: the address may be of a step the restart lost, and a commit of
            // whatever now lies there must not acknowledge it. Steps of that processor are refused the same way.
            DarqGrpcLogMessages.RestartedSinceRegistration(_logger, darq.Name, request.Incarnation, request.Address);
            throw Refuse(method, DarqRpcErrors.ToRpcException(new DarqStaleIncarnationException(darq.Name, request.Incarnation, darq.Incarnation), method, darq.Name)!);
        }

        if (request.Address > darq.TailAddress)
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method,
                $"address {request.Address} is beyond the tail of DARQ '{darq.Name}' ({darq.TailAddress}); nothing there can be committed yet."));
        }

        try
        {
            await darq.EnsureDurableAsync(request.Address, context.CancellationToken).ConfigureAwait(false);
            return new WaitForCommitReply { CommittedUntil = darq.CommittedUntilAddress };
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }
    }

    /// <inheritdoc />
    public override async Task<ListParkedDeliveriesReply> ListParkedDeliveries(ListParkedDeliveriesRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(ListParkedDeliveries);
        await AuthorizeOperatorCallAsync(method, context).ConfigureAwait(false);
        var darq = Resolve(method, request.Darq);
        var reply = new ListParkedDeliveriesReply { PendingOutCount = darq.PendingOutCount };
        try
        {
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
                    PendingOutCount = await darq.PendingOutCountAsync(parked.Destination, context.CancellationToken).ConfigureAwait(false),
                });
            }
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }

        return reply;
    }

    /// <inheritdoc />
    public override async Task<RetryParkedDeliveryReply> RetryParkedDelivery(RetryParkedDeliveryRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(RetryParkedDelivery);
        await AuthorizeOperatorCallAsync(method, context).ConfigureAwait(false);
        var darq = Resolve(method, request.Darq);
        if (string.IsNullOrEmpty(request.Destination))
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method, "destination is empty; name the parked destination to retry (ListParkedDeliveries lists them)."));
        }

        // Not parked (never, or retried meanwhile, by the automatic retry say) is not an error: nothing to do.
        bool retried = darq.RetryParkedDelivery(request.Destination);
        DarqGrpcLogMessages.OperatorRetriedParkedDelivery(_logger, darq.Name, request.Destination, retried, context.Peer);
        return new RetryParkedDeliveryReply { Retried = retried };
    }

    /// <inheritdoc />
    public override async Task<DiscardOutReply> DiscardOut(DiscardOutRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(DiscardOut);
        await AuthorizeOperatorCallAsync(method, context).ConfigureAwait(false);
        var darq = Resolve(method, request.Darq);
        if (request.Lsn < 0)
        {
            throw Refuse(method, DarqRpcErrors.InvalidArgument(method, $"lsn is {request.Lsn}; an LSN is never negative."));
        }

        bool discarded;
        try
        {
            discarded = await darq.DiscardOutAsync(request.Lsn, context.CancellationToken).ConfigureAwait(false);
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }

        if (!discarded)
        {
            throw Refuse(method, DarqRpcErrors.NotPendingOut(method, darq.Name, request.Lsn));
        }

        DarqGrpcLogMessages.OperatorDiscardedOut(_logger, darq.Name, request.Lsn, context.Peer);
        return new DiscardOutReply { CommittedUntil = darq.CommittedUntilAddress };
    }

    /// <inheritdoc />
    public override async Task<RetireProducerReply> RetireProducer(RetireProducerRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        const string method = nameof(RetireProducer);
        await AuthorizeOperatorCallAsync(method, context).ConfigureAwait(false);
        var darq = Resolve(method, request.Darq);
        bool retired;
        try
        {
            retired = await darq.RetireProducerAsync(request.ProducerId, context.CancellationToken).ConfigureAwait(false);
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }

        // Logged before anything else can fail: the retirement stands whatever the reply does.
        DarqGrpcLogMessages.OperatorRetiredProducer(_logger, darq.Name, request.ProducerId, retired, context.Peer);
        int count;
        try
        {
            count = await darq.ProducerCountAsync(CancellationToken.None).ConfigureAwait(false);
        }
        catch (Exception e) when (DarqRpcErrors.ToRpcException(e, method, darq.Name) is { } status)
        {
            throw Refuse(method, status);
        }

        return new RetireProducerReply { Retired = retired, ProducerCount = count };
    }

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

    /// <summary>
    /// <see cref="Darq.EnsureDurableAsync"/> for a request that is appended already and would be appended again by a resend: a
    /// failure is ABORTED naming the appended entry (<see cref="DarqRpcErrors.NotDurable"/>), never UNAVAILABLE.
    /// </summary>
    private async ValueTask EnsureAppendedDurableAsync(string method, Darq darq, string what, long lsn, long durableAt, CancellationToken cancellationToken)
    {
        try
        {
            await darq.EnsureDurableAsync(durableAt, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or InvalidOperationException)
        {
            throw Refuse(method, DarqRpcErrors.AppendedNotDurable(method, darq.Name, what, lsn, durableAt, e));
        }
    }

    /// <summary>The random, nonzero id of an open DARQ instance (a reopened DARQ is another instance, with another id).</summary>
    private static long InstanceOf(Darq darq) =>
        Instances.GetValue(darq, static _ => new StrongBox<long>(Random.Shared.NextInt64(1, long.MaxValue))).Value;

    private static readonly ConditionalWeakTable<Darq, StrongBox<long>> Instances = new();

    /// <summary>Why an encoded DSE header does not parse, or <see langword="null"/> when it does.</summary>
    private static string? CheckHeader(ByteString header) => DseHeader.TryParse(header.Span, out _, out string error) ? null : error;

    private Darq Resolve(string method, string name)
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
}
