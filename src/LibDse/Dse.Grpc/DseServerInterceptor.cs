using System.Runtime.ExceptionServices;
using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Dse.Grpc;

/// <summary>
/// Makes a gRPC service speculative without DSE code in its handlers. For each call it reads the caller's DSE header
/// from the request metadata and starts an action that consumes it; each synchronous segment of the handler runs as an
/// action and the call is detached as an sthread across awaits (see docs/grpc.md). A speculative caller (one that sent
/// a header) gets the reply at once with the call's header in the response trailers; a non-speculative caller (no
/// header), or any caller while the StateObject runs non-speculatively, gets the reply only after a barrier: once
/// everything the call observed is recoverable.
/// </summary>
/// <remarks>
/// Streaming responses always pass a barrier, message by message: gRPC carries metadata per call, not per message,
/// so a streamed message cannot carry its own dependencies. Code the handler runs after <c>ConfigureAwait(false)</c>
/// runs outside any action and must not touch the StateObject's state.
/// </remarks>
public sealed class DseServerInterceptor : Interceptor
{
    private readonly StateObject _owner;
    private readonly DseHeaderAuthentication? _authentication;

    /// <summary>
    /// Intercepts calls on behalf of <paramref name="owner"/>, the StateObject whose state the handlers change, accepting
    /// a DSE header only from a caller that <paramref name="authentication"/> accepts (UNAUTHENTICATED or
    /// PERMISSION_DENIED otherwise, before the handler runs); <c>null</c> accepts a header from any caller.
    /// </summary>
    /// <remarks>One constructor, so that <c>Interceptors.Add&lt;DseServerInterceptor&gt;(owner)</c> activates it
    /// unambiguously, taking the <see cref="DseHeaderAuthentication"/> registered in DI when there is one.</remarks>
    public DseServerInterceptor(StateObject owner, DseHeaderAuthentication? authentication = null)
    {
        ArgumentNullException.ThrowIfNull(owner);
        _owner = owner;
        _authentication = authentication;
    }

    /// <summary>The StateObject the handlers run on.</summary>
    public StateObject Owner => _owner;

    /// <summary>Who may send a DSE header; <c>null</c> when any caller may.</summary>
    public DseHeaderAuthentication? Authentication => _authentication;

    /// <inheritdoc />
    public override async Task<TResponse> UnaryServerHandler<TRequest, TResponse>(TRequest request, ServerCallContext context, UnaryServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(continuation);
        var (scope, speculativeCaller) = await BeginAsync(context).ConfigureAwait(false);
        return await RunAsync(scope, speculativeCaller, context, () => continuation(request, context)).ConfigureAwait(false);
    }

    /// <inheritdoc />
    public override async Task<TResponse> ClientStreamingServerHandler<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, ServerCallContext context, ClientStreamingServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(continuation);
        var (scope, speculativeCaller) = await BeginAsync(context).ConfigureAwait(false);
        return await RunAsync(scope, speculativeCaller, context, () => continuation(requestStream, context)).ConfigureAwait(false);
    }

    /// <inheritdoc />
    public override async Task ServerStreamingServerHandler<TRequest, TResponse>(TRequest request, IServerStreamWriter<TResponse> responseStream, ServerCallContext context, ServerStreamingServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(continuation);
        var (scope, speculativeCaller) = await BeginAsync(context).ConfigureAwait(false);
        var writer = new DseBarrierStreamWriter<TResponse>(responseStream, scope, context.Method);
        await RunAsync(scope, speculativeCaller, context, async () =>
        {
            await continuation(request, writer, context);
            return true;
        }).ConfigureAwait(false);
    }

    /// <inheritdoc />
    public override async Task DuplexStreamingServerHandler<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, IServerStreamWriter<TResponse> responseStream, ServerCallContext context, DuplexStreamingServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(continuation);
        var (scope, speculativeCaller) = await BeginAsync(context).ConfigureAwait(false);
        var writer = new DseBarrierStreamWriter<TResponse>(responseStream, scope, context.Method);
        await RunAsync(scope, speculativeCaller, context, async () =>
        {
            await continuation(requestStream, writer, context);
            return true;
        }).ConfigureAwait(false);
    }

    /// <summary>Reads the caller's header and starts the call's first action, as manual mode does.</summary>
    private async ValueTask<(DseCallScope Scope, bool SpeculativeCaller)> BeginAsync(ServerCallContext context)
    {
        bool speculativeCaller = await DseManualCall.StartActionAsync(_owner, context, _authentication).ConfigureAwait(false);
        return (new DseCallScope(_owner, context.CancellationToken), speculativeCaller);
    }

    /// <summary>Runs the handler in the call's scope, then releases the reply as the caller's kind requires.</summary>
    private async Task<T> RunAsync<T>(DseCallScope scope, bool speculativeCaller, ServerCallContext context, Func<Task<T>> handler)
    {
        var task = scope.Start(handler);
        if (task.IsCompleted)
        {
            // The fast path: the handler never waited, so the call is one action, still held here.
            scope.CloseInline();
            if (speculativeCaller && _owner.Options.Speculative)
            {
                DseMetadata.SetHeader(context.ResponseTrailers, _owner.EndAction());
                return task.IsCompletedSuccessfully ? task.Result : await ReplyWithErrorAsync(task).ConfigureAwait(false);
            }

            var sthread = _owner.Detach();
            if (task.IsCompletedSuccessfully)
            {
                await ReleaseReplyAsync(_owner, sthread, speculativeCaller, context).ConfigureAwait(false);
                return task.Result;
            }

            await ReleaseReplyAsync(_owner, sthread, speculativeCaller, context).ConfigureAwait(false);
            return await ReplyWithErrorAsync(task).ConfigureAwait(false);
        }

        T result = default!;
        ExceptionDispatchInfo? failure = null;
        try
        {
            result = await scope.SettleAsync(task).ConfigureAwait(false);
        }
        catch (Exception ex) when (scope.IsAbandoned)
        {
            // The call was abandoned between segments: nothing it did may be shown, and there is no reply to hold.
            throw DseRpcErrors.Map(ex, _owner, context.Method);
        }
        catch (Exception ex)
        {
            // An error reply is a reply too: it may depend on speculative state, so it is released like a result.
            failure = ExceptionDispatchInfo.Capture(WithoutDseHeader(ex));
        }

        await ReleaseReplyAsync(_owner, scope.Sthread, speculativeCaller, context).ConfigureAwait(false);
        failure?.Throw();
        return result;
    }

    /// <summary>Rethrows the failure of a handler that completed, without a DSE header in its trailers.</summary>
    private static async Task<T> ReplyWithErrorAsync<T>(Task<T> task)
    {
        try
        {
            return await task.ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            ExceptionDispatchInfo.Throw(WithoutDseHeader(ex));
            throw;
        }
    }

    /// <summary>
    /// An error reply carries this call's header only: a DSE header in the exception's trailers (a downstream's) would
    /// shadow it at the caller.
    /// </summary>
    private static Exception WithoutDseHeader(Exception error) =>
        error is RpcException rpc && rpc.Trailers.Any(e => e.Key == DseMetadata.HeaderKey)
            ? new RpcException(rpc.Status, DseMetadata.WithoutHeader(rpc.Trailers), rpc.Message)
            : error;

    /// <summary>
    /// Releases a reply: to a speculative caller of a speculative StateObject at once, with the call's header in the
    /// trailers; otherwise after a barrier on everything the call observed.
    /// </summary>
    internal static async ValueTask ReleaseReplyAsync(StateObject owner, Sthread sthread, bool speculativeCaller, ServerCallContext context)
    {
        try
        {
            if (speculativeCaller && owner.Options.Speculative)
            {
                DseMetadata.SetHeader(context.ResponseTrailers, sthread.Send());
                return;
            }

            await sthread.BarrierAsync(context.CancellationToken).ConfigureAwait(false);
            if (speculativeCaller)
            {
                // Tells the caller's interceptor that the missing header is deliberate (everything here is recoverable).
                context.ResponseTrailers.Add(DseMetadata.BarrierKey, "1");
            }
        }
        catch (Exception ex) when (ex is not OperationCanceledException)
        {
            throw DseRpcErrors.Map(ex, owner, context.Method);
        }
    }
}
