using Google.Protobuf;
using Grpc.Core;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>
/// Calls to the coordinator service that bypass GrpcCoordinatorClient: arbitrary request bytes (garbled or hand-made
/// messages the client would never send), through a marshaller that passes bytes as they are.
/// </summary>
internal static class RawCalls
{
    public const string Service = "dse.coordinator.v1.Coordinator";

    private static readonly Marshaller<byte[]> Bytes = Marshallers.Create(static (byte[] b) => b, static b => b);

    public static async Task<byte[]> CallAsync(ChannelBase channel, string method, byte[] request)
    {
        var descriptor = new Method<byte[], byte[]>(MethodType.Unary, Service, method, Bytes, Bytes);
        var options = new CallOptions(deadline: DateTime.UtcNow.AddSeconds(30));
        using var call = channel.CreateCallInvoker().AsyncUnaryCall(descriptor, null, options, request);
        return await call.ResponseAsync;
    }

    public static async Task<Wire.WaitForChangeResponse> WaitForChangeAsync(ChannelBase channel, Wire.WaitForChangeRequest request) =>
        Wire.WaitForChangeResponse.Parser.ParseFrom(await CallAsync(channel, "WaitForChange", request.ToByteArray()));

    /// <summary>The refusal a raw call ends with.</summary>
    public static async Task<RpcException> RefusedAsync(ChannelBase channel, string method, byte[] request) =>
        await Assert.ThrowsAsync<RpcException>(() => CallAsync(channel, method, request));
}
