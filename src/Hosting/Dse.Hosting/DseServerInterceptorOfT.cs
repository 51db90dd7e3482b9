using Dse.Grpc;
using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Dse.Hosting;

/// <summary>
/// A <see cref="DseServerInterceptor"/> bound through DI to the StateObject registered as <typeparamref name="T"/>, so
/// one host can give different services different StateObjects.
/// </summary>
public sealed class DseServerInterceptor<T>(T owner) : Interceptor
    where T : StateObject
{
    private readonly DseServerInterceptor _inner = new(owner);

    /// <inheritdoc />
    public override Task<TResponse> UnaryServerHandler<TRequest, TResponse>(TRequest request, ServerCallContext context, UnaryServerMethod<TRequest, TResponse> continuation) =>
        _inner.UnaryServerHandler(request, context, continuation);

    /// <inheritdoc />
    public override Task<TResponse> ClientStreamingServerHandler<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, ServerCallContext context, ClientStreamingServerMethod<TRequest, TResponse> continuation) =>
        _inner.ClientStreamingServerHandler(requestStream, context, continuation);

    /// <inheritdoc />
    public override Task ServerStreamingServerHandler<TRequest, TResponse>(TRequest request, IServerStreamWriter<TResponse> responseStream, ServerCallContext context, ServerStreamingServerMethod<TRequest, TResponse> continuation) =>
        _inner.ServerStreamingServerHandler(request, responseStream, context, continuation);

    /// <inheritdoc />
    public override Task DuplexStreamingServerHandler<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, IServerStreamWriter<TResponse> responseStream, ServerCallContext context, DuplexStreamingServerMethod<TRequest, TResponse> continuation) =>
        _inner.DuplexStreamingServerHandler(requestStream, responseStream, context, continuation);
}
