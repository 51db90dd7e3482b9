using System.Buffers.Binary;
using System.Text;
using Dse.Grpc;
using Dse.Services.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Services.Grpc.Tests;

/// <summary>The key-value gRPC API over real gRPC on loopback, with the interceptor and with DSE by hand.</summary>
public sealed class KvServiceTests : IAsyncLifetime
{
    private readonly ServicesCluster _cluster = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AllRpcs_SpeculativeCaller_RoundTripAndReturnHeaders(bool manual)
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        RegisterReserve(kv);
        var server = await _cluster.ServeKvAsync(kv, manual);
        var sthread = await client.NewSthreadAsync();
        using (DseCall.Use(sthread))
        {
            var api = server.DseKv();
            Assert.False((await api.GetAsync(new GetRequest { Key = B("k") })).Found);
            await api.PutAsync(new PutRequest { Key = B("k"), Value = B("v1") });
            var got = await api.GetAsync(new GetRequest { Key = B("k") });
            Assert.True(got.Found);
            Assert.Equal("v1", got.Value.ToStringUtf8());

            Assert.False((await api.CompareAndSwapAsync(new CompareAndSwapRequest { Key = B("k"), Expected = B("v0"), Value = B("v2") })).Swapped);
            Assert.True((await api.CompareAndSwapAsync(new CompareAndSwapRequest { Key = B("k"), Expected = B("v1"), Value = B("v2") })).Swapped);
            Assert.False((await api.CompareAndSwapAsync(new CompareAndSwapRequest { Key = B("n"), Expected = B("x"), Value = B("y") })).Swapped);
            Assert.True((await api.CompareAndSwapAsync(new CompareAndSwapRequest { Key = B("n"), Value = B("y") })).Swapped);
            Assert.Equal("v2", (await api.GetAsync(new GetRequest { Key = B("k") })).Value.ToStringUtf8());

            Assert.True((await api.DeleteAsync(new DeleteRequest { Key = B("k") })).Existed);
            Assert.False((await api.DeleteAsync(new DeleteRequest { Key = B("k") })).Existed);
            Assert.True((await api.CompareAndSwapAsync(new CompareAndSwapRequest { Key = B("n"), Expected = B("y") })).Swapped);
            Assert.False((await api.GetAsync(new GetRequest { Key = B("n") })).Found);

            await api.PutAsync(new PutRequest { Key = B("seats"), Value = Count(1) });
            Assert.Equal(1, (await api.ExecuteAsync(new ExecuteRequest { Procedure = "reserve", Input = B("seats") })).Output[0]);
            Assert.Equal(0, (await api.ExecuteAsync(new ExecuteRequest { Procedure = "reserve", Input = B("seats") })).Output[0]);

            // The reply's header came back in the trailers and was received into the caller's sthread.
            using var call = api.GetAsync(new GetRequest { Key = B("seats") });
            await call.ResponseAsync;
            Assert.Contains(call.GetTrailers(), e => e.Key == DseMetadata.HeaderKey);
        }

        Assert.Contains(sthread.Dependencies.ToArray(), d => d.ObjectId == kv.Id);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Put_NonSpeculativeCaller_ReplyHeldUntilRecoverable(bool manual)
    {
        var kv = await _cluster.OpenKvAsync(2);
        var server = await _cluster.ServeKvAsync(kv, manual);

        using var call = server.PlainKv().PutAsync(new PutRequest { Key = B("k"), Value = B("v") });
        while (await ReadAsync(kv, "k") is null)
        {
            await Task.Yield();
        }

        // Nothing is persisted until the test advances: the reply must still be waiting at the barrier.
        Assert.False(call.ResponseAsync.IsCompleted);
        await kv.AdvanceVersionAsync();
        await call.ResponseAsync;
        Assert.True(kv.CommittedVersion >= 1);
        Assert.DoesNotContain(call.GetTrailers(), e => e.Key == DseMetadata.HeaderKey);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Put_CallerStateLost_StoreReturnsToCommittedState(bool manual)
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        var server = await _cluster.ServeKvAsync(kv, manual);
        await kv.StartLocalActionAsync();
        await kv.PutAsync(B("seat").Memory, B("free").Memory);
        kv.EndAction();
        await ServicesCluster.CommitAsync(kv);

        using (DseCall.Use(await client.NewSthreadAsync()))
        {
            var api = server.DseKv();
            await api.PutAsync(new PutRequest { Key = B("seat"), Value = B("taken") });
            await api.PutAsync(new PutRequest { Key = B("other"), Value = B("x") });
            Assert.Equal("taken", (await api.GetAsync(new GetRequest { Key = B("seat") })).Value.ToStringUtf8());
        }

        // The store persists the writes, which depend on the client's state; the client crashes before persisting it.
        await kv.AdvanceVersionAsync();
        await _cluster.RestartAsync(client);
        await ServicesCluster.WaitForRollbackAsync(kv);

        var reader = await _cluster.OpenClientAsync(3);
        using (DseCall.Use(await reader.NewSthreadAsync()))
        {
            var api = server.DseKv();
            Assert.Equal("free", (await api.GetAsync(new GetRequest { Key = B("seat") })).Value.ToStringUtf8());
            Assert.False((await api.GetAsync(new GetRequest { Key = B("other") })).Found);
        }
    }

    [Fact]
    public async Task Execute_ConcurrentReserves_NeverOversell()
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        RegisterReserve(kv);
        var server = await _cluster.ServeKvAsync(kv, manual: false);
        using (DseCall.Use(await client.NewSthreadAsync()))
        {
            var api = server.DseKv();
            await api.PutAsync(new PutRequest { Key = B("flight"), Value = Count(3) });
            var calls = new Task<ExecuteReply>[8];
            for (int i = 0; i < calls.Length; i++)
            {
                calls[i] = api.ExecuteAsync(new ExecuteRequest { Procedure = "reserve", Input = B("flight") }).ResponseAsync;
            }

            int reserved = 0;
            foreach (var reply in await Task.WhenAll(calls))
            {
                reserved += reply.Output[0];
            }

            Assert.Equal(3, reserved);
            var left = await api.GetAsync(new GetRequest { Key = B("flight") });
            Assert.Equal(0, BinaryPrimitives.ReadInt64LittleEndian(left.Value.Span));
        }
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Execute_ProcedureThrowsAfterWriting_FailedPreconditionAndNothingApplied(bool manual)
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        kv.RegisterProcedure("book-then-fail", static (context, input) =>
        {
            context.Put(input.Span, "booked"u8);
            throw new InvalidOperationException("the payment was declined");
        });
        var server = await _cluster.ServeKvAsync(kv, manual);
        using (DseCall.Use(await client.NewSthreadAsync()))
        {
            var api = server.DseKv();
            var error = await Assert.ThrowsAsync<RpcException>(() => api.ExecuteAsync(new ExecuteRequest { Procedure = "book-then-fail", Input = B("seat") }).ResponseAsync);
            Assert.Equal(StatusCode.FailedPrecondition, error.StatusCode);
            Assert.Contains("book-then-fail", error.Status.Detail, StringComparison.Ordinal);
            Assert.Contains("payment was declined", error.Status.Detail, StringComparison.Ordinal);
            Assert.False((await api.GetAsync(new GetRequest { Key = B("seat") })).Found);
        }
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task BadInput_EmptyKeyOversizedValueUnknownProcedure_ClearStatusesAndNothingWritten(bool manual)
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        var server = await _cluster.ServeKvAsync(kv, manual);
        using (DseCall.Use(await client.NewSthreadAsync()))
        {
            var api = server.DseKv();
            var empty = await Assert.ThrowsAsync<RpcException>(() => api.PutAsync(new PutRequest { Key = ByteString.Empty, Value = B("v") }).ResponseAsync);
            Assert.Equal(StatusCode.InvalidArgument, empty.StatusCode);
            Assert.Contains("must not be empty", empty.Status.Detail, StringComparison.Ordinal);

            var tooLong = await Assert.ThrowsAsync<RpcException>(() => api.PutAsync(new PutRequest { Key = B("k"), Value = ByteString.CopyFrom(new byte[4097]) }).ResponseAsync);
            Assert.Equal(StatusCode.InvalidArgument, tooLong.StatusCode);
            Assert.Contains("4097 bytes", tooLong.Status.Detail, StringComparison.Ordinal);

            var longKey = await Assert.ThrowsAsync<RpcException>(() => api.CompareAndSwapAsync(new CompareAndSwapRequest { Key = ByteString.CopyFrom(new byte[65]), Value = B("v") }).ResponseAsync);
            Assert.Equal(StatusCode.InvalidArgument, longKey.StatusCode);

            var unknown = await Assert.ThrowsAsync<RpcException>(() => api.ExecuteAsync(new ExecuteRequest { Procedure = "no-such-thing" }).ResponseAsync);
            Assert.Equal(StatusCode.NotFound, unknown.StatusCode);
            Assert.Contains("'no-such-thing'", unknown.Status.Detail, StringComparison.Ordinal);

            var unnamed = await Assert.ThrowsAsync<RpcException>(() => api.ExecuteAsync(new ExecuteRequest()).ResponseAsync);
            Assert.Equal(StatusCode.InvalidArgument, unnamed.StatusCode);

            Assert.False((await api.GetAsync(new GetRequest { Key = B("k") })).Found);
        }
    }

    /// <summary>The travel app's procedure: takes one unit of the counter under the input key if any is left.</summary>
    internal static void RegisterReserve(SpeculativeKv kv) =>
        kv.RegisterProcedure("reserve", static (context, input) =>
        {
            var current = context.Get(input.Span);
            long left = current is null ? 0 : BinaryPrimitives.ReadInt64LittleEndian(current);
            if (left <= 0)
            {
                return new byte[] { 0 };
            }

            var next = new byte[8];
            BinaryPrimitives.WriteInt64LittleEndian(next, left - 1);
            context.Put(input.Span, next);
            return new byte[] { 1 };
        });

    private static ByteString B(string s) => ByteString.CopyFromUtf8(s);

    private static ByteString Count(long n)
    {
        var bytes = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, n);
        return ByteString.CopyFrom(bytes);
    }

    /// <summary>Reads <paramref name="key"/> in a local action of the store, as UTF-8 (null if absent).</summary>
    internal static async Task<string?> ReadAsync(SpeculativeKv kv, string key)
    {
        await kv.StartLocalActionAsync();
        try
        {
            var value = await kv.GetAsync(Encoding.UTF8.GetBytes(key));
            return value is null ? null : Encoding.UTF8.GetString(value);
        }
        finally
        {
            kv.EndAction();
        }
    }
}
