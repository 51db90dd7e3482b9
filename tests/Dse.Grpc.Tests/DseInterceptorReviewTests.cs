using Dse.Grpc.Tests.Wire;
using Grpc.Core;

namespace Dse.Grpc.Tests;

/// <summary>Regression tests for defects a review of the interceptors found; each failed before its fix.</summary>
public sealed class DseInterceptorReviewTests : IAsyncLifetime
{
    private readonly RelayCluster _cluster = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    [Fact]
    public async Task Add_CallRolledBackWhileForwarding_HandlerNeverResumes()
    {
        var client = await _cluster.OpenAsync(1);
        var a = await _cluster.OpenAsync(2);
        var b = await _cluster.OpenAsync(3);
        var serverB = await _cluster.ServeAsync(b);
        var serverA = await _cluster.ServeAsync(a, next: serverB);

        await client.StartLocalActionAsync();
        var sthread = client.Detach();
        AsyncUnaryCall<AddReply> call;
        using (DseCall.Use(sthread))
        {
            call = serverA.DseClient().AddAsync(new AddRequest { Amount = 1, Forward = true, HoldNext = true, Catch = true });
        }

        await serverB.Node.Entered;

        // The caller's state is lost while A waits on B: A's call is rolled back with it.
        await _cluster.RestartAsync(client);
        await RelayCluster.WaitForWorldLineAsync(a, 1);

        // B's reply now reaches a rolled-back call: A must not resume its handler (not even its catch block).
        serverB.Node.Release();
        var error = await Assert.ThrowsAsync<RpcException>(() => call.ResponseAsync);
        Assert.Equal(StatusCode.Aborted, error.StatusCode);
        var ran = await Task.WhenAny(serverA.Node.CatchRan.Task, Task.Delay(500));
        Assert.NotSame(serverA.Node.CatchRan.Task, ran);
        Assert.Equal(0, a.Value);
    }

    [Fact]
    public async Task Add_DownstreamError_CarriesOnlyTheCallersOwnHeader()
    {
        var client = await _cluster.OpenAsync(1);
        var a = await _cluster.OpenAsync(2);
        var b = await _cluster.OpenAsync(3);
        var serverB = await _cluster.ServeAsync(b);
        var serverA = await _cluster.ServeAsync(a, next: serverB);

        await client.StartLocalActionAsync();
        var sthread = client.Detach();
        using var binding = DseCall.Use(sthread);
        using var call = serverA.DseClient().AddAsync(new AddRequest { Amount = 1, Forward = true, FailNext = true });
        var error = await Assert.ThrowsAsync<RpcException>(() => call.ResponseAsync);
        Assert.Equal(StatusCode.FailedPrecondition, error.StatusCode);

        // The error depends on A's state (A added before forwarding): the client must depend on A, not only on B.
        Assert.Contains(sthread.Dependencies.ToArray(), d => d.ObjectId == a.Id);
        Assert.Single(call.GetTrailers(), e => e.Key == DseMetadata.HeaderKey);
    }

    [Fact]
    public async Task Add_NonSpeculativeCallerDeadlinePassesBeforeCommit_IsDeadlineExceeded()
    {
        var client = await _cluster.OpenAsync(1, speculative: false);
        var a = await _cluster.OpenAsync(2);
        var server = await _cluster.ServeAsync(a);

        await client.StartLocalActionAsync();
        var sthread = client.Detach();
        using var binding = DseCall.Use(sthread);

        // The client's state is never committed (manual group commit): the call waits, then its deadline passes.
        using var call = server.DseClient().AddAsync(new AddRequest { Amount = 1 }, deadline: DateTime.UtcNow.AddMilliseconds(200));
        var error = await Assert.ThrowsAsync<RpcException>(() => call.ResponseAsync);
        Assert.Equal(StatusCode.DeadlineExceeded, error.StatusCode);
        Assert.Equal(StatusCode.DeadlineExceeded, call.GetStatus().StatusCode);
        Assert.Equal(0, a.Value);

        using var disposed = server.DseClient().AddAsync(new AddRequest { Amount = 1 });
        disposed.Dispose();
        var cancelled = await Assert.ThrowsAsync<RpcException>(() => disposed.ResponseAsync);
        Assert.Equal(StatusCode.Cancelled, cancelled.StatusCode);
        Assert.Empty(server.Node.Seen);
    }

    [Fact]
    public async Task Add_ConcurrentCallsUnderOneBinding_ReceiveEveryReply()
    {
        var client = await _cluster.OpenAsync(1);
        var a = await _cluster.OpenAsync(2);
        var b = await _cluster.OpenAsync(3);
        var serverA = await _cluster.ServeAsync(a);
        var serverB = await _cluster.ServeAsync(b);

        await client.StartLocalActionAsync();
        var sthread = client.Detach();
        AddReply[] replies;
        using (DseCall.Use(sthread))
        {
            var clientA = serverA.DseClient();
            var clientB = serverB.DseClient();
            replies = await Task.WhenAll(Enumerable.Range(0, 40).Select(i => (i % 2 == 0 ? clientA : clientB).AddAsync(new AddRequest { Amount = 1 }).ResponseAsync));
        }

        var deps = sthread.Dependencies.ToArray();
        Assert.Contains(deps, d => d.ObjectId == a.Id && d.Version >= replies.Where((_, i) => i % 2 == 0).Max(r => r.Version));
        Assert.Contains(deps, d => d.ObjectId == b.Id && d.Version >= replies.Where((_, i) => i % 2 == 1).Max(r => r.Version));
    }
}
