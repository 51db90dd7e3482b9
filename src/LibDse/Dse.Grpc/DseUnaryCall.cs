using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Dse.Grpc;

/// <summary>
/// An outgoing unary call with DSE state. It is sent at once, or (from a non-speculative StateObject) only once the
/// state it carries is committed. The header of its reply is received before the caller sees the reply; a reply from
/// rolled-back state fails the call with ABORTED, and then the call's status and trailers are that ABORTED status.
/// </summary>
internal sealed class DseUnaryCall<TRequest, TResponse>
    where TRequest : class
    where TResponse : class
{
    private readonly TaskCompletionSource<AsyncUnaryCall<TResponse>> _sent = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _disposed = new();
    private readonly DseClientInterceptor _interceptor;
    private RpcException? _failure;

    public DseUnaryCall(TRequest request, ClientInterceptorContext<TRequest, TResponse> context, Interceptor.AsyncUnaryCallContinuation<TRequest, TResponse> continuation, DseOrigin origin, DseClientInterceptor interceptor)
    {
        _interceptor = interceptor;
        Call = new AsyncUnaryCall<TResponse>(RunAsync(request, context, continuation, origin), HeadersAsync(), GetStatus, GetTrailers, Dispose);
    }

    public AsyncUnaryCall<TResponse> Call { get; }

    private async Task<TResponse> RunAsync(TRequest request, ClientInterceptorContext<TRequest, TResponse> context, Interceptor.AsyncUnaryCallContinuation<TRequest, TResponse> continuation, DseOrigin origin)
    {
        string method = context.Method.FullName;
        AsyncUnaryCall<TResponse> call;
        try
        {
            if (origin.WaitsForCommit)
            {
                await WaitForCommitAsync(context, origin, method).ConfigureAwait(false);
            }

            call = continuation(request, origin.AddTo(context, _interceptor.Authorization));
        }
        catch (RpcException ex)
        {
            _failure = ex;
            _sent.TrySetException(ex);
            throw;
        }

        _sent.TrySetResult(call);
        if (_disposed.IsCancellationRequested)
        {
            call.Dispose();   // disposed while the call was being sent
        }

        TResponse response;
        try
        {
            response = await call.ResponseAsync.ConfigureAwait(false);
        }
        catch (RpcException ex)
        {
            await ReceiveAsync(origin, ex.Trailers, method).ConfigureAwait(false);

            // An error reply is received like a result; its header stays here, so a handler that lets the error
            // propagate does not hand the downstream's header to its own caller in place of its own.
            throw new RpcException(ex.Status, DseMetadata.WithoutHeader(ex.Trailers), ex.Message);
        }

        var trailers = call.GetTrailers();
        if (!await ReceiveAsync(origin, trailers, method).ConfigureAwait(false) && trailers.Get(DseMetadata.BarrierKey) is null)
        {
            // Error replies are left out: a DSE server refuses some calls (a malformed or rolled-back header) before any action.
            _interceptor.ReplyWithoutHeader(method);
        }

        return response;
    }

    /// <summary>A non-speculative sender sends nothing before it is recoverable; the call's deadline still applies.</summary>
    private async Task WaitForCommitAsync(ClientInterceptorContext<TRequest, TResponse> context, DseOrigin origin, string method)
    {
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(_disposed.Token, context.Options.CancellationToken);
        if (context.Options.Deadline is { } deadline && deadline != DateTime.MaxValue)
        {
            var left = deadline.ToUniversalTime() - DateTime.UtcNow;
            linked.CancelAfter(left > TimeSpan.Zero ? left : TimeSpan.Zero);
        }

        try
        {
            await origin.WaitForCommitAsync(method, linked.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (linked.IsCancellationRequested)
        {
            bool expired = !_disposed.IsCancellationRequested && !context.Options.CancellationToken.IsCancellationRequested;
            throw new RpcException(expired
                ? new Status(StatusCode.DeadlineExceeded, $"{method}: the deadline passed while the call waited for the commit of the state it carries.")
                : new Status(StatusCode.Cancelled, $"{method}: cancelled while the call waited for the commit of the state it carries."));
        }
    }

    /// <summary>Receives the reply's header, if any; returns whether there was one.</summary>
    private async ValueTask<bool> ReceiveAsync(DseOrigin origin, Metadata trailers, string method)
    {
        try
        {
            return await origin.ReceiveAsync(trailers, method).ConfigureAwait(false);
        }
        catch (RpcException ex)
        {
            _failure = ex;
            throw;
        }
    }

    private void Dispose()
    {
        _disposed.Cancel();
        if (_sent.Task.IsCompletedSuccessfully)
        {
            _sent.Task.Result.Dispose();
        }
    }

    private async Task<Metadata> HeadersAsync() => await (await _sent.Task.ConfigureAwait(false)).ResponseHeadersAsync.ConfigureAwait(false);

    private Status GetStatus() => _failure?.Status ?? Sent().GetStatus();

    private Metadata GetTrailers() => _failure?.Trailers ?? Sent().GetTrailers();

    private AsyncUnaryCall<TResponse> Sent() => _sent.Task.IsCompletedSuccessfully
        ? _sent.Task.Result
        : throw new InvalidOperationException("The call was not sent yet: it waits for the commit of the state it carries.");
}
