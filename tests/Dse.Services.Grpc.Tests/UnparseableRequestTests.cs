using Dse.Testing;
using Grpc.Core;
using Microsoft.Extensions.Logging;

namespace Dse.Services.Grpc.Tests;

/// <summary>
/// Request bytes that do not parse as the request message are INVALID_ARGUMENT naming the method and the message type,
/// for every method of the key-value (with the interceptor and by hand) and log services; gRPC logs the refusal at
/// Information, and nothing is logged at Warning or above or with a stack trace.
/// </summary>
public sealed class UnparseableRequestTests : IAsyncLifetime
{
    private readonly ServicesCluster _cluster = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    [Theory]
    [InlineData("Get", "GetRequest", false)]
    [InlineData("Put", "PutRequest", false)]
    [InlineData("Delete", "DeleteRequest", false)]
    [InlineData("CompareAndSwap", "CompareAndSwapRequest", false)]
    [InlineData("Execute", "ExecuteRequest", false)]
    [InlineData("Get", "GetRequest", true)]
    [InlineData("Put", "PutRequest", true)]
    [InlineData("Execute", "ExecuteRequest", true)]
    public async Task KeyValue_GarbageBytes_InvalidArgumentAndNoErrorLogged(string method, string requestType, bool manual)
    {
        var server = await _cluster.ServeKvAsync(await _cluster.OpenKvAsync(2), manual);

        await AssertRefusedAsync(server, "dse.services.v1.KeyValueService", method, requestType);
    }

    [Theory]
    [InlineData("Append", "AppendRequest")]
    [InlineData("Read", "ReadRequest")]
    [InlineData("Scan", "ScanRequest")]
    public async Task Log_GarbageBytes_InvalidArgumentAndNoErrorLogged(string method, string requestType)
    {
        var log = await _cluster.OpenLogAsync(2);
        var server = await _cluster.ServeLogAsync(log);
        long tail = log.TailLsn;

        await AssertRefusedAsync(server, "dse.services.v1.LogService", method, requestType);
        Assert.Equal(tail, log.TailLsn);
    }

    private static async Task AssertRefusedAsync(ServicesServer server, string service, string method, string requestType)
    {
        var error = await Assert.ThrowsAsync<RpcException>(() => RawGrpcCall.UnaryAsync(server.Channel, service, method, RawGrpcCall.Garbage()));

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.StartsWith($"/{service}/{method}: the request is not a valid {requestType} message: ", error.Status.Detail, StringComparison.Ordinal);
        Assert.Contains(server.Logs.Entries, e => e.Level == LogLevel.Information && e.Message.Contains(error.Status.Detail, StringComparison.Ordinal));
        BadInputLogging.AssertNone(server.Logs);
    }
}
