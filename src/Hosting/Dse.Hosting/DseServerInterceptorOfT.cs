using Dse.Grpc;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Microsoft.Extensions.Options;

namespace Dse.Hosting;

/// <summary>
/// A <see cref="DseServerInterceptor"/> bound through DI to the StateObject registered as <typeparamref name="T"/>, so
/// one host can give different services different StateObjects. A reply that waits at its barrier (a caller without
/// a DSE header, a non-speculative StateObject, or the end of a streaming call) waits at most
/// <see cref="DseHostingOptions.BarrierTimeout"/> once the handler returned, then fails with DEADLINE_EXCEEDED and a
/// message naming the versions it waited for and why they have not committed.
/// </summary>
public sealed class DseServerInterceptor<T> : Interceptor
    where T : StateObject
{
    private readonly T _owner;
    private readonly DseServerInterceptor _inner;
    private readonly TimeSpan _barrierTimeout;
    private readonly TimeProvider _time;

    /// <summary>
    /// Intercepts calls on behalf of <paramref name="owner"/> with the host's barrier timeout, accepting DSE headers only
    /// from callers <paramref name="authentication"/> accepts (hosting registers it from <c>Dse:Participants</c>;
    /// <c>null</c>: from any caller).
    /// </summary>
    public DseServerInterceptor(T owner, IOptions<DseHostingOptions> options, TimeProvider? timeProvider = null, DseHeaderAuthentication? authentication = null)
    {
        ArgumentNullException.ThrowIfNull(owner);
        ArgumentNullException.ThrowIfNull(options);
        _owner = owner;
        _inner = new DseServerInterceptor(owner, authentication);
        _barrierTimeout = options.Value.BarrierTimeout;
        _time = timeProvider ?? TimeProvider.System;
    }

    /// <inheritdoc />
    public override Task<TResponse> UnaryServerHandler<TRequest, TResponse>(TRequest request, ServerCallContext context, UnaryServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(context);
        if (!WaitsAtBarrier(context, streamsReplies: false))
        {
            return _inner.UnaryServerHandler(request, context, continuation);
        }

        var wait = NewWait(context);
        return wait.BoundAsync(_inner.UnaryServerHandler(request, context, (r, c) => wait.RunHandler(() => continuation(r, c))));
    }

    /// <inheritdoc />
    public override Task<TResponse> ClientStreamingServerHandler<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, ServerCallContext context, ClientStreamingServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(context);
        if (!WaitsAtBarrier(context, streamsReplies: false))
        {
            return _inner.ClientStreamingServerHandler(requestStream, context, continuation);
        }

        var wait = NewWait(context);
        return wait.BoundAsync(_inner.ClientStreamingServerHandler(requestStream, context, (r, c) => wait.RunHandler(() => continuation(r, c))));
    }

    /// <inheritdoc />
    public override Task ServerStreamingServerHandler<TRequest, TResponse>(TRequest request, IServerStreamWriter<TResponse> responseStream, ServerCallContext context, ServerStreamingServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(context);
        if (!WaitsAtBarrier(context, streamsReplies: true))
        {
            return _inner.ServerStreamingServerHandler(request, responseStream, context, continuation);
        }

        var wait = NewWait(context);
        return wait.BoundAsync(_inner.ServerStreamingServerHandler(request, responseStream, context, (r, w, c) => wait.RunHandler(() => continuation(r, w, c))));
    }

    /// <inheritdoc />
    public override Task DuplexStreamingServerHandler<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, IServerStreamWriter<TResponse> responseStream, ServerCallContext context, DuplexStreamingServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(context);
        if (!WaitsAtBarrier(context, streamsReplies: true))
        {
            return _inner.DuplexStreamingServerHandler(requestStream, responseStream, context, continuation);
        }

        var wait = NewWait(context);
        return wait.BoundAsync(_inner.DuplexStreamingServerHandler(requestStream, responseStream, context, (r, w, c) => wait.RunHandler(() => continuation(r, w, c))));
    }

    /// <summary>
    /// Whether the call's end waits at a barrier with a bound to enforce: the reply to a speculative caller of a
    /// speculative StateObject leaves at once and needs none (that path allocates nothing here).
    /// </summary>
    private bool WaitsAtBarrier(ServerCallContext context, bool streamsReplies) =>
        _barrierTimeout != Timeout.InfiniteTimeSpan
        && (streamsReplies || !_owner.Options.Speculative || context.RequestHeaders.Get(DseMetadata.HeaderKey) is null);

    private DseBarrierWait NewWait(ServerCallContext context) => new(_owner, context.Method, _barrierTimeout, _time);
}
