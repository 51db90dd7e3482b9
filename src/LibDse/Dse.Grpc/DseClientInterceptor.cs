using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Dse.Grpc;

/// <summary>
/// Carries speculation across outgoing calls. A call made inside an intercepted handler's action sends that action's
/// vertex in the request metadata; a call made in a flow bound with <see cref="DseCall.Use"/> sends the sthread's
/// header. The header in the reply's trailers is received before the caller sees the reply; a reply from rolled-back
/// state fails the call with ABORTED. A non-speculative StateObject sends nothing before it is recoverable: the call
/// waits for the commit of the state it carries. Calls made with no DSE context pass through untouched.
/// </summary>
/// <remarks>
/// Streaming calls carry the header of the moment they start, are not delayed in non-speculative mode, and do not
/// receive a reply header (an intercepted server releases every streamed message after a barrier). Blocking calls are
/// refused inside a DSE context, because they would hold the action while they wait.
/// </remarks>
public sealed class DseClientInterceptor : Interceptor
{
    /// <inheritdoc />
    public override AsyncUnaryCall<TResponse> AsyncUnaryCall<TRequest, TResponse>(TRequest request, ClientInterceptorContext<TRequest, TResponse> context, AsyncUnaryCallContinuation<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        var origin = DseOrigin.Capture(context.Method.FullName);
        return origin.Kind == DseOriginKind.None
            ? continuation(request, context)
            : new DseUnaryCall<TRequest, TResponse>(request, context, continuation, origin).Call;
    }

    /// <inheritdoc />
    public override TResponse BlockingUnaryCall<TRequest, TResponse>(TRequest request, ClientInterceptorContext<TRequest, TResponse> context, BlockingUnaryCallContinuation<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        if (DseOrigin.Capture(context.Method.FullName).Kind != DseOriginKind.None)
        {
            throw new NotSupportedException($"{context.Method.FullName}: a blocking call inside a DSE call or bound sthread would hold the action while it waits; use the async call.");
        }

        return continuation(request, context);
    }

    /// <inheritdoc />
    public override AsyncServerStreamingCall<TResponse> AsyncServerStreamingCall<TRequest, TResponse>(TRequest request, ClientInterceptorContext<TRequest, TResponse> context, AsyncServerStreamingCallContinuation<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        return continuation(request, DseOrigin.Capture(context.Method.FullName).AddTo(context));
    }

    /// <inheritdoc />
    public override AsyncClientStreamingCall<TRequest, TResponse> AsyncClientStreamingCall<TRequest, TResponse>(ClientInterceptorContext<TRequest, TResponse> context, AsyncClientStreamingCallContinuation<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        return continuation(DseOrigin.Capture(context.Method.FullName).AddTo(context));
    }

    /// <inheritdoc />
    public override AsyncDuplexStreamingCall<TRequest, TResponse> AsyncDuplexStreamingCall<TRequest, TResponse>(ClientInterceptorContext<TRequest, TResponse> context, AsyncDuplexStreamingCallContinuation<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        return continuation(DseOrigin.Capture(context.Method.FullName).AddTo(context));
    }
}
