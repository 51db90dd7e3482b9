using Grpc.Core;

namespace Dse.Testing;

/// <summary>
/// Unary calls that send request bytes as they are, bypassing the service's generated client: garbled bytes or hand-made
/// messages a real client would never send. The reply comes back as bytes too.
/// </summary>
public static class RawGrpcCall
{
    /// <summary>Bytes that parse as no protobuf message: a field tag, then a varint that never ends.</summary>
    public static byte[] Garbage() => [0x08, 0xFF, 0xFF, 0xFF, 0xFF];

    private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(static (byte[] b) => b, static b => b);

    /// <summary>A method whose requests and replies are bytes as they are, for calls that bypass generated clients.</summary>
    public static Method<byte[], byte[]> BytesMethod(MethodType type, string service, string method) => new(type, service, method, Bytes, Bytes);

    /// <summary>Calls <c>/<paramref name="service"/>/<paramref name="method"/></c> with <paramref name="request"/> as the request bytes (a 30 s deadline).</summary>
    public static async Task<byte[]> UnaryAsync(ChannelBase channel, string service, string method, byte[] request, Metadata? headers = null)
    {
        ArgumentNullException.ThrowIfNull(channel);
        var descriptor = BytesMethod(MethodType.Unary, service, method);
        var options = new CallOptions(headers, deadline: DateTime.UtcNow.AddSeconds(30));
        using var call = channel.CreateCallInvoker().AsyncUnaryCall(descriptor, null, options, request);
        return await call.ResponseAsync;
    }

    /// <summary>
    /// Calls a server-streaming method with <paramref name="request"/> as the request bytes and reads the stream to its
    /// end (a 30 s deadline); returns the messages.
    /// </summary>
    public static async Task<List<byte[]>> ServerStreamingAsync(ChannelBase channel, string service, string method, byte[] request)
    {
        ArgumentNullException.ThrowIfNull(channel);
        var descriptor = BytesMethod(MethodType.ServerStreaming, service, method);
        var options = new CallOptions(deadline: DateTime.UtcNow.AddSeconds(30));
        using var call = channel.CreateCallInvoker().AsyncServerStreamingCall(descriptor, null, options, request);
        var messages = new List<byte[]>();
        while (await call.ResponseStream.MoveNext(CancellationToken.None))
        {
            messages.Add(call.ResponseStream.Current);
        }

        return messages;
    }
}
