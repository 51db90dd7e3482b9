using System.Collections.Concurrent;
using Grpc.Core;
using Grpc.Core.Interceptors;

namespace Dse.Workflows.Grpc.Tests;

/// <summary>
/// A plain server interceptor (no DSE) that tells when a unary handler first gave control back, and whether it had
/// finished by then. A handler whose waits before its barrier all complete at once gives control back exactly when it
/// waits at its barrier: its action has run, so persisting the log after that covers it.
/// </summary>
public sealed class HandlerProbe : Interceptor
{
    private readonly ConcurrentDictionary<string, TaskCompletionSource<bool>> _returned = new();

    /// <summary>Completes when the first call of <paramref name="method"/> (a full name) gave control back: true if it had finished.</summary>
    public Task<bool> ReturnedAsync(string method) => Returned(method).Task;

    public override Task<TResponse> UnaryServerHandler<TRequest, TResponse>(TRequest request, ServerCallContext context, UnaryServerMethod<TRequest, TResponse> continuation)
    {
        var reply = continuation(request, context);
        Returned(context.Method).TrySetResult(reply.IsCompleted);
        return reply;
    }

    private TaskCompletionSource<bool> Returned(string method) =>
        _returned.GetOrAdd(method, static _ => new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously));
}
