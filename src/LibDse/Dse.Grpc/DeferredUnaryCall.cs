using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Dse.Grpc;

/// <summary>
/// A unary call from a non-speculative StateObject: it is sent only once the state it carries is recoverable. The
/// caller gets the call object at once; status and trailers exist once the call was really sent.
/// </summary>
internal sealed class DeferredUnaryCall<TRequest, TResponse> : IDisposable
    where TRequest : class
    where TResponse : class
{
    private readonly TaskCompletionSource<AsyncUnaryCall<TResponse>> _sent = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly CancellationTokenSource _disposed = new();

    public DeferredUnaryCall(TRequest request, ClientInterceptorContext<TRequest, TResponse> context, Interceptor.AsyncUnaryCallContinuation<TRequest, TResponse> continuation, DseOrigin origin)
    {
        Call = new AsyncUnaryCall<TResponse>(SendAsync(request, context, continuation, origin), HeadersAsync(), GetStatus, GetTrailers, Dispose);
    }

    public AsyncUnaryCall<TResponse> Call { get; }

    public void Dispose()
    {
        _disposed.Cancel();
        if (_sent.Task.IsCompletedSuccessfully)
        {
            _sent.Task.Result.Dispose();
        }
    }

    private async Task<TResponse> SendAsync(TRequest request, ClientInterceptorContext<TRequest, TResponse> context, Interceptor.AsyncUnaryCallContinuation<TRequest, TResponse> continuation, DseOrigin origin)
    {
        AsyncUnaryCall<TResponse> call;
        try
        {
            using var linked = CancellationTokenSource.CreateLinkedTokenSource(_disposed.Token, context.Options.CancellationToken);
            await origin.WaitForCommitAsync(context.Method.FullName, linked.Token).ConfigureAwait(false);
            call = continuation(request, origin.AddTo(context));
        }
        catch (Exception ex)
        {
            _sent.TrySetException(ex);
            throw;
        }

        _sent.TrySetResult(call);
        return await origin.ReceiveReplyAsync(call.ResponseAsync, call.GetTrailers, context.Method.FullName).ConfigureAwait(false);
    }

    private async Task<Metadata> HeadersAsync() => await (await _sent.Task.ConfigureAwait(false)).ResponseHeadersAsync.ConfigureAwait(false);

    private Status GetStatus() => Sent().GetStatus();

    private Metadata GetTrailers() => Sent().GetTrailers();

    private AsyncUnaryCall<TResponse> Sent() => _sent.Task.IsCompletedSuccessfully
        ? _sent.Task.Result
        : throw new InvalidOperationException("The call was not sent: it waits for the commit of the state it carries, or that wait failed.");
}
