using Dse.Testing;
using Grpc.Core;
using Microsoft.Extensions.Logging;

namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// Request bytes that do not parse as the request message are INVALID_ARGUMENT naming the method and the message type,
/// for every method of DarqService, the streaming Register included; nothing is appended, gRPC logs the refusal at
/// Information, and nothing is logged at Warning or above or with a stack trace.
/// </summary>
public sealed class UnparseableRequestTests
{
    private const string Service = "dse.darq.v1.DarqService";

    [Theory]
    [InlineData("Enqueue")]
    [InlineData("Step")]
    [InlineData("Deliver")]
    [InlineData("DeliverBatch")]
    [InlineData("Checkpoint")]
    [InlineData("WaitForCommit")]
    [InlineData("ListParkedDeliveries")]
    [InlineData("RetryParkedDelivery")]
    [InlineData("DiscardOut")]
    [InlineData("RetireProducer")]
    public async Task UnaryMethod_GarbageBytes_InvalidArgumentAndNothingChanges(string method)
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(options => options.EnableOperatorCalls = true, darq);
        long tail = darq.TailAddress;

        var error = await Assert.ThrowsAsync<RpcException>(() => RawGrpcCall.UnaryAsync(server.Channel, Service, method, RawGrpcCall.Garbage()));

        AssertRefused(error, server, method, $"{method}Request");
        Assert.Equal(tail, darq.TailAddress);
    }

    [Fact]
    public async Task Register_GarbageBytes_InvalidArgumentAndNoProcessorRegistered()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        long incarnation = darq.Incarnation;

        var error = await Assert.ThrowsAsync<RpcException>(() => RawGrpcCall.ServerStreamingAsync(server.Channel, Service, "Register", RawGrpcCall.Garbage()));

        AssertRefused(error, server, "Register", "RegisterRequest");
        Assert.Equal(incarnation, darq.Incarnation);
    }

    private static void AssertRefused(RpcException error, DarqServer server, string method, string requestType)
    {
        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.StartsWith($"/{Service}/{method}: the request is not a valid {requestType} message: ", error.Status.Detail, StringComparison.Ordinal);
        Assert.Contains(server.Logs.Entries, e => e.Level == LogLevel.Information && e.Message.Contains(error.Status.Detail, StringComparison.Ordinal));
        BadInputLogging.AssertNone(server.Logs);
    }
}
