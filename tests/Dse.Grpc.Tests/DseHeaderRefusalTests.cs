using Dse.Grpc.Tests.Wire;
using Dse.Testing;
using Grpc.Core;
using Microsoft.Extensions.Logging;

namespace Dse.Grpc.Tests;

/// <summary>
/// Request metadata the server cannot use as a DSE header is INVALID_ARGUMENT with a short reason, through the
/// interceptor and through manual mode alike: the handler never runs, nothing changes, and nothing is logged at Warning
/// or above or with a stack trace.
/// </summary>
public sealed class DseHeaderRefusalTests : IAsyncLifetime
{
    private readonly RelayCluster _cluster = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Add_TwoDseHeaders_InvalidArgumentAndHandlerNeverRuns(bool manual)
    {
        var caller = await _cluster.OpenAsync(1);
        var a = await _cluster.OpenAsync(2);
        var server = await _cluster.ServeAsync(a, manual: manual);

        // Each header is well-formed; two of them are not (HTTP/2 joins them with a comma, which is not base64).
        var header = DseHeader.FromOrigin(caller.Id, 0, caller.CurrentVersion).ToArray();
        var headers = new Metadata { { DseMetadata.HeaderKey, header }, { DseMetadata.HeaderKey, header } };

        var error = await AddRefusedAsync(server, headers);

        Assert.Contains($"one '{DseMetadata.HeaderKey}' entry", error.Status.Detail, StringComparison.Ordinal);
        AssertNothingRan(server, a);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Add_HeaderBytesThatDoNotParse_InvalidArgumentNamingWhy(bool manual)
    {
        var a = await _cluster.OpenAsync(2);
        var server = await _cluster.ServeAsync(a, manual: manual);

        var error = await AddRefusedAsync(server, new Metadata { { DseMetadata.HeaderKey, "garbage, not a DSE header"u8.ToArray() } });

        Assert.StartsWith($"Malformed DSE header in '{DseMetadata.HeaderKey}': ", error.Status.Detail, StringComparison.Ordinal);
        AssertNothingRan(server, a);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Add_WellFormedHeaderTheReceiverRefuses_InvalidArgumentNamingWhy(bool manual)
    {
        var a = await _cluster.OpenAsync(2);
        var server = await _cluster.ServeAsync(a, manual: manual);

        // Parses, but names a participant the coordinator never registered: the StateObject's header rules refuse it.
        var headers = new Metadata { { DseMetadata.HeaderKey, DseHeader.FromOrigin(999, 0, 1).ToArray() } };
        var error = await AddRefusedAsync(server, headers);

        Assert.StartsWith($"Malformed DSE header in '{DseMetadata.HeaderKey}': ", error.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("999", error.Status.Detail, StringComparison.Ordinal);
        AssertNothingRan(server, a);
    }

    private static async Task<RpcException> AddRefusedAsync(RelayServer server, Metadata headers)
    {
        var error = await Assert.ThrowsAsync<RpcException>(() => server.PlainClient().AddAsync(new AddRequest { Amount = 1 }, headers).ResponseAsync);
        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        return error;
    }

    /// <summary>
    /// The handler never ran (it records every request it accepts), nothing was added, and the refusal was logged as bad
    /// input: by gRPC at Information, nothing at Warning or above or with a stack trace.
    /// </summary>
    private static void AssertNothingRan(RelayServer server, CounterObject counter)
    {
        Assert.Empty(server.Node.Seen);
        Assert.Equal(0, counter.Value);
        Assert.Contains(server.Logs.Entries, e => e.Level == LogLevel.Information && e.Message.Contains("InvalidArgument", StringComparison.Ordinal));
        BadInputLogging.AssertNone(server.Logs);
    }
}
