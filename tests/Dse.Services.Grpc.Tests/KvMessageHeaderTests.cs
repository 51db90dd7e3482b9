using Dse.Grpc;
using Dse.Services.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Services.Grpc.Tests;

/// <summary>
/// The DSE header carried in the key-value messages' <c>dse_header</c> field instead of call metadata: the manual
/// server consumes it and answers with its own in the reply, exactly as it would through metadata; anything ambiguous,
/// malformed or sent where it would be ignored is refused and writes nothing.
/// </summary>
public sealed class KvMessageHeaderTests : IAsyncLifetime
{
    private readonly ServicesCluster _cluster = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    [Fact]
    public async Task AllRpcs_HeaderInMessage_RepliesAtOnceWithTheServersHeaderInTheReply()
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        KvServiceTests.RegisterReserve(kv);
        var server = await _cluster.ServeKvAsync(kv, manual: true);
        var sthread = await client.NewSthreadAsync();
        var api = server.PlainKv();

        // Group commit is manual: every reply below arrives before anything is persisted, so none waited at a barrier.
        await ReceiveAsync(sthread, (await api.PutAsync(new PutRequest { Key = B("k"), Value = B("v1"), DseHeader = Header(sthread) })).DseHeader);
        var got = await api.GetAsync(new GetRequest { Key = B("k"), DseHeader = Header(sthread) });
        Assert.Equal("v1", got.Value.ToStringUtf8());
        await ReceiveAsync(sthread, got.DseHeader);
        var swapped = await api.CompareAndSwapAsync(new CompareAndSwapRequest { Key = B("k"), Expected = B("v1"), Value = B("v2"), DseHeader = Header(sthread) });
        Assert.True(swapped.Swapped);
        await ReceiveAsync(sthread, swapped.DseHeader);
        var executed = await api.ExecuteAsync(new ExecuteRequest { Procedure = "reserve", Input = B("none-left"), DseHeader = Header(sthread) });
        Assert.Equal(0, executed.Output[0]);
        await ReceiveAsync(sthread, executed.DseHeader);

        using var call = api.DeleteAsync(new DeleteRequest { Key = B("k"), DseHeader = Header(sthread) });
        var deleted = await call.ResponseAsync;
        Assert.True(deleted.Existed);
        await ReceiveAsync(sthread, deleted.DseHeader);
        Assert.DoesNotContain(call.GetTrailers(), e => e.Key == DseMetadata.HeaderKey);

        Assert.Contains(sthread.Dependencies.ToArray(), d => d.ObjectId == kv.Id);
    }

    [Fact]
    public async Task Put_HeaderInMessage_CallerStateLost_StoreReturnsToCommittedState()
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        var server = await _cluster.ServeKvAsync(kv, manual: true);
        await kv.StartLocalActionAsync();
        await kv.PutAsync(B("seat").Memory, B("free").Memory);
        kv.EndAction();
        await ServicesCluster.CommitAsync(kv);

        var sthread = await client.NewSthreadAsync();
        await server.PlainKv().PutAsync(new PutRequest { Key = B("seat"), Value = B("taken"), DseHeader = Header(sthread) });
        Assert.Equal("taken", await KvServiceTests.ReadAsync(kv, "seat"));

        // The write depends on the client's version because the server consumed the header from the message: when the
        // client crashes before persisting it, the store rolls the persisted write back.
        await kv.AdvanceVersionAsync();
        await _cluster.RestartAsync(client);
        await ServicesCluster.WaitForRollbackAsync(kv);
        Assert.Equal("free", await KvServiceTests.ReadAsync(kv, "seat"));
    }

    [Fact]
    public async Task Execute_HeaderInMessageAndTheProcedureFails_ErrorReleasedOnlyAfterABarrier()
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        kv.RegisterProcedure("fail", static (_, _) => throw new InvalidOperationException("declined"));
        var server = await _cluster.ServeKvAsync(kv, manual: true);
        var sthread = await client.NewSthreadAsync();

        // An error has no reply message to carry the server's header, so it waits until what it shows is recoverable:
        // the caller's version it depends on, and the store's.
        using var call = server.PlainKv().ExecuteAsync(new ExecuteRequest { Procedure = "fail", DseHeader = Header(sthread) }, deadline: DateTime.UtcNow.AddSeconds(60));
        await Task.WhenAny(call.ResponseAsync, Task.Delay(300));
        Assert.False(call.ResponseAsync.IsCompleted);
        await ServicesCluster.CommitAsync(client);
        await ServicesCluster.AwaitReleasedAsync(call.ResponseAsync, kv);
        var error = await Assert.ThrowsAsync<RpcException>(() => call.ResponseAsync);
        Assert.Equal(StatusCode.FailedPrecondition, error.StatusCode);
        Assert.DoesNotContain(error.Trailers, e => e.Key == DseMetadata.HeaderKey);
    }

    [Fact]
    public async Task Put_HeaderInMessageAndInMetadata_RefusedAndNothingWritten()
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        var server = await _cluster.ServeKvAsync(kv, manual: true);
        var sthread = await client.NewSthreadAsync();
        var metadata = new Metadata();
        DseMetadata.SetHeader(metadata, sthread.Send());

        var error = await Assert.ThrowsAsync<RpcException>(() => server.PlainKv().PutAsync(
            new PutRequest { Key = B("k"), Value = B("v"), DseHeader = Header(sthread) }, metadata).ResponseAsync);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Contains("both in its request message and in", error.Status.Detail, StringComparison.Ordinal);
        Assert.Null(await KvServiceTests.ReadAsync(kv, "k"));
    }

    public static TheoryData<string, byte[]> Malformed() => new()
    {
        { "not a DSE header", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16] },
        { "truncated", DseHeader.FromOrigin(1, 0, 1).ToArray()[..20] },
        { "unknown participant", DseHeader.FromOrigin(999, 0, 1).ToArray() },
        { "far-future version", DseHeader.FromOrigin(1, 0, 1L << 60).ToArray() },
    };

    [Theory]
    [MemberData(nameof(Malformed))]
    public async Task Put_MalformedOrImplausibleHeaderInMessage_RefusedAndTheStoreKeepsServing(string kind, byte[] header)
    {
        await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        var server = await _cluster.ServeKvAsync(kv, manual: true);
        long version = kv.CurrentVersion;

        var error = await Assert.ThrowsAsync<RpcException>(() => server.PlainKv().PutAsync(
            new PutRequest { Key = B("k"), Value = B("forged"), DseHeader = ByteString.CopyFrom(header) }).ResponseAsync);

        Assert.True(error.StatusCode == StatusCode.InvalidArgument, $"{kind}: {error.Status}");
        Assert.Contains("request message", error.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(version, kv.CurrentVersion);
        Assert.Null(await KvServiceTests.ReadAsync(kv, "k"));

        // A plain write's reply is released once the store's version is recoverable, which the test drives.
        using var call = server.PlainKv().PutAsync(new PutRequest { Key = B("after"), Value = B("yes") }, deadline: DateTime.UtcNow.AddSeconds(60));
        await ServicesCluster.AwaitReleasedAsync(call.ResponseAsync, kv);
        await call.ResponseAsync;
        Assert.Equal("yes", await KvServiceTests.ReadAsync(kv, "after"));
    }

    [Fact]
    public async Task Put_HeaderInMessageToTheInterceptorServer_RefusedAndNothingWritten()
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        var server = await _cluster.ServeKvAsync(kv, manual: false);
        var sthread = await client.NewSthreadAsync();

        // The interceptor reads metadata only: a header it would ignore must not let the write escape the caller's fate.
        // The caller sent no metadata header, so the refusal is released after a barrier, which the test drives.
        using var call = server.PlainKv().PutAsync(new PutRequest { Key = B("k"), Value = B("v"), DseHeader = Header(sthread) }, deadline: DateTime.UtcNow.AddSeconds(60));
        await ServicesCluster.AwaitReleasedAsync(call.ResponseAsync, kv);
        var error = await Assert.ThrowsAsync<RpcException>(() => call.ResponseAsync);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Contains(DseMetadata.HeaderKey, error.Status.Detail, StringComparison.Ordinal);
        Assert.Null(await KvServiceTests.ReadAsync(kv, "k"));
    }

    private static ByteString Header(Sthread sthread) => ByteString.CopyFrom(sthread.Send().ToArray());

    private static async Task ReceiveAsync(Sthread sthread, ByteString header)
    {
        Assert.False(header.IsEmpty, "a speculative server answers a header in the message with its own");
        Assert.True(await sthread.ReceiveAsync(DseHeader.Parse(header.Span)));
    }

    private static ByteString B(string s) => ByteString.CopyFromUtf8(s);
}
