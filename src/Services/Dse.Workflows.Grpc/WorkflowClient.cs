using System.Text.Json;
using Dse.Workflows.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Workflows.Grpc;

/// <summary>
/// A typed client of <c>dse.workflows.v1.WorkflowService</c>: inputs, payloads and results as JSON (the engine's
/// default serializer unless told otherwise), outcomes and refusals as the engine's exceptions. A call is speculative
/// when the call invoker carries a DSE header (a channel intercepted with <see cref="Dse.Grpc.DseClientInterceptor"/>,
/// inside <c>DseCall.Use</c> or a DSE handler); otherwise every reply shows only recoverable state.
/// </summary>
/// <remarks>
/// Refusals map to <see cref="UnknownWorkflowTypeException"/>, <see cref="ArgumentException"/> (INVALID_ARGUMENT),
/// <see cref="WorkflowNotFoundException"/> (NOT_FOUND), <see cref="WorkflowNotRunningException"/> (FAILED_PRECONDITION)
/// and <see cref="WorkflowEngineUnavailableException"/> (UNAVAILABLE from the engine), each with the server's detail and
/// the <see cref="RpcException"/> inside; anything else (a transport failure, ABORTED, a deadline) stays an
/// <see cref="RpcException"/>.
/// </remarks>
public sealed class WorkflowClient
{
    private readonly JsonSerializerOptions _serializer;

    /// <summary>A client over <paramref name="callInvoker"/> (for example <c>channel.Intercept(new DseClientInterceptor())</c>).</summary>
    /// <param name="callInvoker">Carries the calls.</param>
    /// <param name="serializerOptions">How inputs, payloads and results are (de)serialized; default <see cref="JsonSerializerOptions.Web"/>, as the engine's default. Use the engine's.</param>
    public WorkflowClient(CallInvoker callInvoker, JsonSerializerOptions? serializerOptions = null)
    {
        ArgumentNullException.ThrowIfNull(callInvoker);
        Client = new WorkflowService.WorkflowServiceClient(callInvoker);
        _serializer = serializerOptions ?? JsonSerializerOptions.Web;
    }

    /// <summary>A client over <paramref name="channel"/>, without DSE.</summary>
    public WorkflowClient(ChannelBase channel, JsonSerializerOptions? serializerOptions = null)
        : this((channel ?? throw new ArgumentNullException(nameof(channel))).CreateCallInvoker(), serializerOptions)
    {
    }

    /// <summary>The generated client underneath, for calls with options of their own (a deadline, headers).</summary>
    public WorkflowService.WorkflowServiceClient Client { get; }

    /// <summary>Starts workflow <paramref name="id"/> of type <paramref name="type"/>, or returns the instance with that id (idempotent by id).</summary>
    public async Task<WorkflowStartResult> StartAsync<TInput>(string type, string id, TInput input, CancellationToken cancellationToken = default)
    {
        var request = StartRequest(type, id, input);
        var reply = await CallAsync(id, type, () => Client.StartAsync(request, cancellationToken: cancellationToken).ResponseAsync).ConfigureAwait(false);
        return new WorkflowStartResult(reply.Id, reply.Run, reply.AlreadyStarted);
    }

    /// <summary>Starts workflow <paramref name="id"/> (or joins it) and waits for its result.</summary>
    /// <exception cref="WorkflowFailedException">The workflow failed.</exception>
    /// <exception cref="WorkflowCancelledException">It was cancelled.</exception>
    /// <exception cref="WorkflowStoppedException">The engine stopped it.</exception>
    public async Task<TResult> ExecuteAsync<TInput, TResult>(string type, string id, TInput input, CancellationToken cancellationToken = default)
    {
        var request = StartRequest(type, id, input);
        var reply = await CallAsync(id, type, () => Client.ExecuteAsync(request, cancellationToken: cancellationToken).ResponseAsync).ConfigureAwait(false);
        return Result<TResult>(id, reply);
    }

    /// <summary>Waits for workflow <paramref name="id"/>'s result.</summary>
    /// <exception cref="WorkflowFailedException">The workflow failed.</exception>
    /// <exception cref="WorkflowCancelledException">It was cancelled.</exception>
    /// <exception cref="WorkflowStoppedException">The engine stopped it.</exception>
    public async Task<TResult> GetResultAsync<TResult>(string id, CancellationToken cancellationToken = default)
    {
        var reply = await CallAsync(id, null, () => Client.GetResultAsync(new GetResultRequest { Id = id }, cancellationToken: cancellationToken).ResponseAsync).ConfigureAwait(false);
        return Result<TResult>(id, reply);
    }

    /// <summary>Sends signal <paramref name="name"/> with <paramref name="payload"/> to workflow <paramref name="id"/>.</summary>
    public async Task SignalAsync<T>(string id, string name, T payload, CancellationToken cancellationToken = default)
    {
        var request = new SignalRequest { Id = id, Name = name, Payload = UnsafeByteOperations.UnsafeWrap(JsonSerializer.SerializeToUtf8Bytes(payload, _serializer)) };
        await CallAsync(id, null, () => Client.SignalAsync(request, cancellationToken: cancellationToken).ResponseAsync).ConfigureAwait(false);
    }

    /// <summary>Asks workflow <paramref name="id"/> to cancel.</summary>
    public async Task CancelAsync(string id, CancellationToken cancellationToken = default) =>
        await CallAsync(id, null, () => Client.CancelAsync(new CancelRequest { Id = id }, cancellationToken: cancellationToken).ResponseAsync).ConfigureAwait(false);

    /// <summary>What the engine knows of workflow <paramref name="id"/>.</summary>
    public async Task<WorkflowDescription> DescribeAsync(string id, CancellationToken cancellationToken = default)
    {
        var reply = await CallAsync(id, null, () => Client.DescribeAsync(new DescribeRequest { Id = id }, cancellationToken: cancellationToken).ResponseAsync).ConfigureAwait(false);
        var status = Status(id, reply.Status);
        var outcome = status == WorkflowStatus.Running
            ? null
            : new WorkflowOutcome(status, reply.Result.Memory, NullIfEmpty(reply.ErrorType), NullIfEmpty(reply.ErrorMessage));
        return new WorkflowDescription(reply.Id, reply.Type, reply.Run, status, reply.HistoryLength, reply.PendingCommands, outcome);
    }

    private StartRequest StartRequest<TInput>(string type, string id, TInput input) => new()
    {
        Type = type,
        Id = id,
        Input = UnsafeByteOperations.UnsafeWrap(JsonSerializer.SerializeToUtf8Bytes(input, _serializer)),
    };

    private TResult Result<TResult>(string id, ResultReply reply) => Status(id, reply.Status) switch
    {
        WorkflowStatus.Completed => JsonSerializer.Deserialize<TResult>(reply.Result.Span, _serializer)!,
        WorkflowStatus.Failed => throw new WorkflowFailedException(id, reply.ErrorType, $"Workflow '{id}' failed: {reply.ErrorMessage}"),
        WorkflowStatus.Cancelled => throw new WorkflowCancelledException(id, $"Workflow '{id}' was cancelled."),
        WorkflowStatus.Stopped => throw new WorkflowStoppedException(id, $"Workflow '{id}' is stopped: {reply.ErrorMessage}"),
        var other => throw new InvalidDataException($"The server answered a result of workflow '{id}' with status {other}, which is no outcome."),
    };

    private static WorkflowStatus Status(string id, V1.WorkflowStatus status) =>
        WorkflowWire.FromWire(status) ?? throw new InvalidDataException($"The server answered workflow '{id}' with status {status}, which this client does not know.");

    /// <summary>Makes the call, turning the service's refusals into the engine's exceptions.</summary>
    private static async Task<T> CallAsync<T>(string id, string? type, Func<Task<T>> call)
    {
        try
        {
            return await call().ConfigureAwait(false);
        }
        catch (RpcException ex) when (ex.Trailers.GetValue(WorkflowRpcErrors.ErrorKey) is { } kind)
        {
            string detail = ex.Status.Detail;
            throw kind switch
            {
                WorkflowRpcErrors.UnknownType when type is not null => new UnknownWorkflowTypeException(type),
                WorkflowRpcErrors.UnknownType or WorkflowRpcErrors.InvalidArgument => new ArgumentException(detail, ex),
                WorkflowRpcErrors.NotFound => new WorkflowNotFoundException(id, detail, ex),
                WorkflowRpcErrors.NotRunning => new WorkflowNotRunningException(id, NotRunningStatus(ex), detail, ex),
                WorkflowRpcErrors.Unavailable => new WorkflowEngineUnavailableException(detail, ex),
                _ => ex,
            };
        }
    }

    private static WorkflowStatus NotRunningStatus(RpcException error) =>
        Enum.TryParse<WorkflowStatus>(error.Trailers.GetValue(WorkflowRpcErrors.StatusKey), out var status) ? status : WorkflowStatus.Completed;

    private static string? NullIfEmpty(string value) => value.Length == 0 ? null : value;
}
