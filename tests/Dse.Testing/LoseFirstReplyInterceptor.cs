using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Dse.Testing;

/// <summary>Lets the first unary call reach the server, then reports it UNAVAILABLE (as a reply lost on the way back would).</summary>
public sealed class LoseFirstReplyInterceptor : Interceptor
{
    private int _calls;

    /// <summary>The unary calls made through it so far.</summary>
    public int Calls => Volatile.Read(ref _calls);

    public override AsyncUnaryCall<TResponse> AsyncUnaryCall<TRequest, TResponse>(TRequest request, ClientInterceptorContext<TRequest, TResponse> context,
        AsyncUnaryCallContinuation<TRequest, TResponse> continuation)
    {
        var call = continuation(request, context);
        if (Interlocked.Increment(ref _calls) != 1)
        {
            return call;
        }

        return new AsyncUnaryCall<TResponse>(LoseAsync(call.ResponseAsync), call.ResponseHeadersAsync, call.GetStatus, call.GetTrailers, call.Dispose);

        static async Task<TResponse> LoseAsync(Task<TResponse> reply)
        {
            await reply;
            throw new RpcException(new Status(StatusCode.Unavailable, "test: the reply was lost"));
        }
    }
}
