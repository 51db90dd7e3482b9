using System.Collections.Concurrent;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

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
/// refused inside a DSE context, because they would hold the action while they wait. A unary reply to a call that sent a
/// header, that comes back with neither a header nor the <see cref="DseMetadata.BarrierKey"/> trailer, comes from a
/// server without DSE: the interceptor logs a warning once per method and counts every such reply
/// (<c>dse.grpc.replies.without_header</c>).
/// </remarks>
public sealed class DseClientInterceptor : Interceptor
{
    private readonly ILogger _logger;

    // "Bearer TOKEN", sent with every header; null for no credential. Never logged.
    private readonly string? _authorization;

    // The methods warned about already: the warning is logged once per method, the metric counts every reply.
    private readonly ConcurrentDictionary<string, byte> _warned = new(StringComparer.Ordinal);

    /// <summary>An interceptor that logs nothing (replies without a header are still counted).</summary>
    public DseClientInterceptor()
        : this(NullLogger<DseClientInterceptor>.Instance)
    {
    }

    /// <summary>An interceptor that logs a warning, once per method, for replies from servers without DSE.</summary>
    public DseClientInterceptor(ILogger<DseClientInterceptor> logger)
        : this(logger, token: null)
    {
    }

    /// <summary>
    /// An interceptor that also sends <paramref name="token"/>, the caller's participant token, as
    /// <c>authorization: Bearer TOKEN</c> on every call that carries a DSE header, so that a speculative service with a
    /// participants file (<see cref="DseHeaderAuthentication"/>) accepts the header. Calls without a header, and calls
    /// whose metadata already hold an <c>authorization</c> entry, are sent as they are. <c>null</c>: no credential.
    /// </summary>
    /// <exception cref="ArgumentException">The token cannot be sent as a bearer token; the message never holds it.</exception>
    public DseClientInterceptor(ILogger<DseClientInterceptor> logger, string? token)
    {
        ArgumentNullException.ThrowIfNull(logger);
        if (token is not null && !DseCredentials.IsUsableToken(token, out string problem))
        {
            throw new ArgumentException($"The participant token cannot be sent as a bearer token: {problem}.", nameof(token));
        }

        _logger = logger;
        _authorization = token is null ? null : $"{DseCredentials.Scheme} {token}";
    }

    /// <inheritdoc />
    public override AsyncUnaryCall<TResponse> AsyncUnaryCall<TRequest, TResponse>(TRequest request, ClientInterceptorContext<TRequest, TResponse> context, AsyncUnaryCallContinuation<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        var origin = DseOrigin.Capture(context.Method.FullName);
        return origin.Kind == DseOriginKind.None
            ? continuation(request, context)
            : new DseUnaryCall<TRequest, TResponse>(request, context, continuation, origin, this).Call;
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
        return continuation(request, DseOrigin.Capture(context.Method.FullName).AddTo(context, _authorization));
    }

    /// <inheritdoc />
    public override AsyncClientStreamingCall<TRequest, TResponse> AsyncClientStreamingCall<TRequest, TResponse>(ClientInterceptorContext<TRequest, TResponse> context, AsyncClientStreamingCallContinuation<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        return continuation(DseOrigin.Capture(context.Method.FullName).AddTo(context, _authorization));
    }

    /// <inheritdoc />
    public override AsyncDuplexStreamingCall<TRequest, TResponse> AsyncDuplexStreamingCall<TRequest, TResponse>(ClientInterceptorContext<TRequest, TResponse> context, AsyncDuplexStreamingCallContinuation<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        return continuation(DseOrigin.Capture(context.Method.FullName).AddTo(context, _authorization));
    }

    /// <summary>The credential a call with a header carries ("Bearer TOKEN"), or <c>null</c>.</summary>
    internal string? Authorization => _authorization;

    /// <summary>A successful reply to a call that sent a header came back without one or the barrier trailer.</summary>
    internal void ReplyWithoutHeader(string method)
    {
        if (DseGrpcInstrumentation.RepliesWithoutHeader.Enabled)
        {
            DseGrpcInstrumentation.RepliesWithoutHeader.Add(1, new KeyValuePair<string, object?>("method", method));
        }

        if (_warned.TryAdd(method, 0))
        {
            DseGrpcLogMessages.ReplyWithoutHeader(_logger, method);
        }
    }
}
