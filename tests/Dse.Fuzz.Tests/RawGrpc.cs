using Dse.Testing;
using Grpc.Core;

namespace Dse.Fuzz.Tests;

/// <summary>
/// Unary and server-streaming calls with request bytes as they are (no message type on the client side), each bounded by
/// a deadline, so a fuzzer can send what no generated client would. Unlike <see cref="RawGrpcCall"/>, a refusal is an
/// outcome to examine, not an exception.
/// </summary>
internal static class RawGrpc
{
    /// <summary>How long a call may take: a call still running then is a hang.</summary>
    public static readonly TimeSpan Deadline = TimeSpan.FromSeconds(5);

    public static async Task<CallOutcome> UnaryAsync(CallInvoker invoker, string service, string method, byte[] request, Metadata? headers = null)
    {
        var descriptor = RawGrpcCall.BytesMethod(MethodType.Unary, service, method);
        using var call = invoker.AsyncUnaryCall(descriptor, null, new CallOptions(headers, DateTime.UtcNow + Deadline), request);
        try
        {
            var response = await call.ResponseAsync;
            return new CallOutcome(StatusCode.OK, "", response, call.GetTrailers());
        }
        catch (RpcException e)
        {
            return new CallOutcome(e.StatusCode, e.Status.Detail, null, e.Trailers);
        }
    }

    /// <summary>
    /// Opens a server-streaming call and reads up to <paramref name="maxMessages"/> messages, then cancels it; the outcome
    /// is the status the stream ended with, or OK with the last message read when it was still open.
    /// </summary>
    public static async Task<(CallOutcome Outcome, List<byte[]> Messages)> StreamAsync(CallInvoker invoker, string service, string method, byte[] request, int maxMessages)
    {
        var descriptor = RawGrpcCall.BytesMethod(MethodType.ServerStreaming, service, method);
        using var cancel = new CancellationTokenSource();
        using var call = invoker.AsyncServerStreamingCall(descriptor, null, new CallOptions(deadline: DateTime.UtcNow + Deadline, cancellationToken: cancel.Token), request);
        var messages = new List<byte[]>();
        try
        {
            while (messages.Count < maxMessages && await call.ResponseStream.MoveNext(CancellationToken.None))
            {
                messages.Add(call.ResponseStream.Current);
            }

            if (messages.Count < maxMessages)
            {
                return (new CallOutcome(StatusCode.OK, "stream ended", null, call.GetTrailers()), messages);
            }

            await cancel.CancelAsync();
            return (new CallOutcome(StatusCode.OK, "", messages[^1], null), messages);
        }
        catch (RpcException e)
        {
            return (new CallOutcome(e.StatusCode, e.Status.Detail, null, e.Trailers), messages);
        }
    }
}
