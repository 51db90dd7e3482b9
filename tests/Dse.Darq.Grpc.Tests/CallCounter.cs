using System.Collections.Concurrent;
using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Dse.Darq.Grpc.Tests;

/// <summary>Counts the unary calls a client makes, by method name (<c>Deliver</c>, <c>DeliverBatch</c>, ...).</summary>
internal sealed class CallCounter : Interceptor
{
    private readonly ConcurrentDictionary<string, int> _calls = new(StringComparer.Ordinal);

    public int this[string method] => _calls.GetValueOrDefault(method);

    public override AsyncUnaryCall<TResponse> AsyncUnaryCall<TRequest, TResponse>(TRequest request, ClientInterceptorContext<TRequest, TResponse> context,
        AsyncUnaryCallContinuation<TRequest, TResponse> continuation)
    {
        _calls.AddOrUpdate(context.Method.Name, 1, static (_, count) => count + 1);
        return continuation(request, context);
    }
}
