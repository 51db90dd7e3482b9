using Dse.Testing;
using Google.Protobuf;
using Grpc.Core;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>
/// Calls to the coordinator service that bypass GrpcCoordinatorClient: arbitrary request bytes (garbled or hand-made
/// messages the client would never send), through <see cref="RawGrpcCall"/>.
/// </summary>
internal static class RawCalls
{
    public const string Service = "dse.coordinator.v1.Coordinator";

    public static Task<byte[]> CallAsync(ChannelBase channel, string method, byte[] request, Metadata? headers = null) =>
        RawGrpcCall.UnaryAsync(channel, Service, method, request, headers);

    public static async Task<Wire.WaitForChangeResponse> WaitForChangeAsync(ChannelBase channel, Wire.WaitForChangeRequest request) =>
        Wire.WaitForChangeResponse.Parser.ParseFrom(await CallAsync(channel, "WaitForChange", request.ToByteArray()));

    /// <summary>The refusal a raw call ends with.</summary>
    public static async Task<RpcException> RefusedAsync(ChannelBase channel, string method, byte[] request) =>
        await Assert.ThrowsAsync<RpcException>(() => CallAsync(channel, method, request));
}
