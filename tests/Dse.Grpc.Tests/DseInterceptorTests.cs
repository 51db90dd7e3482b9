using Dse.Grpc.Tests.Wire;
using Grpc.Core;

namespace Dse.Grpc.Tests;

/// <summary>
/// The interceptors end to end over real gRPC on loopback: headers, actions across awaits, barriers, rollbacks (also of a
/// call waiting on a downstream one), errors and deadlines, concurrent calls under one binding.
/// </summary>
public sealed class DseInterceptorTests : IAsyncLifetime
{
    private readonly RelayCluster _cluster = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    [Fact]
    public async Task Add_SpeculativeCaller_GetsReplyAtOnceWithHeaderInTrailers()
    {
        var client = await _cluster.OpenAsync(1);
        var a = await _cluster.OpenAsync(2);
        var server = await _cluster.ServeAsync(a);

        await client.StartLocalActionAsync();
        var sthread = client.Detach();
        AddReply reply;
        using (DseCall.Use(sthread))
        {
            // Nothing is ever persisted here (manual group commit): a reply that waited for a barrier would never come.
            reply = await server.DseClient().AddAsync(new AddRequest { Amount = 5 });
        }

        Assert.Equal(5, reply.Total);
        Assert.Contains(new Dependency(a.Id, reply.Version), sthread.Dependencies.ToArray());
        var seen = Assert.Single(server.Node.Seen);
        Assert.Equal(DseHeaderKind.DependencySet, seen.Kind);
        Assert.Contains(seen.Dependencies.ToArray(), d => d.ObjectId == client.Id);
    }

    [Fact]
    public async Task Add_NonSpeculativeCaller_ReplyHeldUntilItsStateIsRecoverable()
    {
        var a = await _cluster.OpenAsync(2);
        var server = await _cluster.ServeAsync(a);

        using var call = server.PlainClient().AddAsync(new AddRequest { Amount = 3 });
        while (a.Value != 3)
        {
            await Task.Yield();
        }

        long version = a.CurrentVersion;
        Assert.True(a.CommittedVersion < version);
        Assert.False(call.ResponseAsync.IsCompleted);

        await a.AdvanceVersionAsync();
        var reply = await call.ResponseAsync;
        Assert.Equal(3, reply.Total);
        Assert.True(a.CommittedVersion >= reply.Version, $"Committed {a.CommittedVersion}, reply from version {reply.Version}.");
        Assert.DoesNotContain(call.GetTrailers(), e => e.Key == DseMetadata.HeaderKey);
    }

    [Fact]
    public async Task Add_TwoHops_HeaderPropagatesAndRollbackOfLastHopReachesFirst()
    {
        var client = await _cluster.OpenAsync(1);
        var a = await _cluster.OpenAsync(2);
        var b = await _cluster.OpenAsync(3);
        var serverB = await _cluster.ServeAsync(b);
        var serverA = await _cluster.ServeAsync(a, next: serverB);

        // Committed starting points, so the rollback has somewhere to go.
        await a.AdvanceVersionAsync();
        await b.AdvanceVersionAsync();
        await a.WaitForCommitAsync(a.CurrentVersion - 1, 0);
        await b.WaitForCommitAsync(b.CurrentVersion - 1, 0);

        await client.StartLocalActionAsync();
        var sthread = client.Detach();
        AddReply reply;
        using (DseCall.Use(sthread))
        {
            reply = await serverA.DseClient().AddAsync(new AddRequest { Amount = 7, Forward = true });
        }

        Assert.Equal(7, reply.Total);
        Assert.Equal(7, reply.ForwardedTotal);
        var atB = Assert.Single(serverB.Node.Seen);
        Assert.Equal(DseHeaderKind.Origin, atB.Kind);
        Assert.Equal(a.Id, atB.Origin.ObjectId);

        // A persists the version that consumed B's reply; B crashes before persisting the addition. A depended on it.
        await a.AdvanceVersionAsync();
        await _cluster.RestartAsync(b);
        await RelayCluster.WaitForWorldLineAsync(a, 1);

        Assert.Equal(0, a.Value);
        await Assert.ThrowsAsync<DseRolledBackException>(async () => await sthread.BarrierAsync());
    }

    [Fact]
    public async Task Add_HandlerAwaiting_DoesNotBlockPersistence()
    {
        // Group commit runs by itself here: the held call's last segment lands in whatever version is current then.
        var a = await _cluster.OpenAsync(2, period: TimeSpan.FromMilliseconds(5));
        var server = await _cluster.ServeAsync(a);

        using var call = server.PlainClient().AddAsync(new AddRequest { Amount = 1, Hold = true });
        await server.Node.Entered;

        // An action held across the await would keep the gate closed and these would never finish.
        long before = a.CurrentVersion;
        await a.AdvanceVersionAsync();
        await a.AdvanceVersionAsync();
        Assert.True(a.CurrentVersion >= before + 2);
        Assert.False(call.ResponseAsync.IsCompleted);

        server.Node.Release();
        var reply = await call.ResponseAsync;
        Assert.Equal(1, reply.Total);
        Assert.True(a.CommittedVersion >= reply.Version);
    }

    [Fact]
    public async Task Add_CallRolledBackWhileWaiting_SpeculativeCallerGetsAborted()
    {
        var client = await _cluster.OpenAsync(1);
        var a = await _cluster.OpenAsync(2);
        var server = await _cluster.ServeAsync(a);

        await client.StartLocalActionAsync();
        var sthread = client.Detach();
        AsyncUnaryCall<AddReply> call;
        using (DseCall.Use(sthread))
        {
            call = server.DseClient().AddAsync(new AddRequest { Amount = 1, Hold = true });
        }

        await server.Node.Entered;

        // The caller crashes before persisting the state the request came from: the call's state at A is lost too.
        await _cluster.RestartAsync(client);
        await RelayCluster.WaitForWorldLineAsync(a, 1);

        server.Node.Release();
        var error = await Assert.ThrowsAsync<RpcException>(() => call.ResponseAsync);
        Assert.Equal(StatusCode.Aborted, error.StatusCode);
        Assert.Contains("rolled back", error.Status.Detail, StringComparison.Ordinal);
        Assert.Equal("1", error.Trailers.GetValue(DseMetadata.RolledBackKey));
        Assert.Equal(0, a.Value);
    }

    [Fact]
    public async Task Add_RequestFromRolledBackState_IsDiscardedWithAborted()
    {
        var client = await _cluster.OpenAsync(1);
        var a = await _cluster.OpenAsync(2);
        var server = await _cluster.ServeAsync(a);

        await client.StartLocalActionAsync();
        var stale = client.EndAction();
        await _cluster.RestartAsync(client);
        await a.RefreshAsync();

        var headers = new Metadata();
        DseMetadata.SetHeader(headers, stale);
        var error = await Assert.ThrowsAsync<RpcException>(() => server.PlainClient().AddAsync(new AddRequest { Amount = 1 }, headers).ResponseAsync);
        Assert.Equal(StatusCode.Aborted, error.StatusCode);
        Assert.Contains("discarded", error.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(0, a.Value);
    }

    [Fact]
    public async Task Add_MalformedHeader_IsInvalidArgumentAndChangesNothing()
    {
        var a = await _cluster.OpenAsync(2);
        var server = await _cluster.ServeAsync(a);

        var headers = new Metadata { { DseMetadata.HeaderKey, new byte[] { 0xD5, 1, 1 } } };
        var error = await Assert.ThrowsAsync<RpcException>(() => server.PlainClient().AddAsync(new AddRequest { Amount = 1 }, headers).ResponseAsync);
        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Contains("truncated", error.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(0, a.Value);
    }

    [Fact]
    public async Task Add_NonSpeculativeHop_SendsOnlyCommittedState()
    {
        var a = await _cluster.OpenAsync(2, period: TimeSpan.FromMilliseconds(5), speculative: false);
        var b = await _cluster.OpenAsync(3, period: TimeSpan.FromMilliseconds(5), speculative: false);
        var serverB = await _cluster.ServeAsync(b);
        var serverA = await _cluster.ServeAsync(a, next: serverB);

        var reply = await serverA.PlainClient().AddAsync(new AddRequest { Amount = 2, Forward = true });
        Assert.Equal(2, reply.ForwardedTotal);

        // The forwarded request left A only once the version it came from was committed.
        var atB = Assert.Single(serverB.Node.Seen);
        Assert.True(a.CommittedVersion >= atB.Origin.Version);
        Assert.True(a.CommittedVersion >= reply.Version);
    }

    [Fact]
    public async Task Count_StreamedMessages_LeaveOnlyWhenCommitted()
    {
        var a = await _cluster.OpenAsync(2, period: TimeSpan.FromMilliseconds(5));
        var server = await _cluster.ServeAsync(a);

        using var call = server.DseClient().Count(new CountRequest { Count = 3 });
        int received = 0;
        while (await call.ResponseStream.MoveNext(CancellationToken.None))
        {
            var message = call.ResponseStream.Current;
            Assert.True(a.CommittedVersion >= message.Version, $"Message {message.Index} from version {message.Version} arrived with committed {a.CommittedVersion}.");
            received++;
        }

        Assert.Equal(3, received);
        Assert.Equal(3, a.Value);
    }

    [Fact]
    public async Task ManualMode_SpeculativeAndPlainCallers_BehaveLikeTheInterceptor()
    {
        var client = await _cluster.OpenAsync(1);
        var a = await _cluster.OpenAsync(2);
        var server = await _cluster.ServeAsync(a, manual: true);

        await client.StartLocalActionAsync();
        var sthread = client.Detach();
        using (DseCall.Use(sthread))
        {
            var reply = await server.DseClient().AddAsync(new AddRequest { Amount = 4 });
            Assert.Contains(new Dependency(a.Id, reply.Version), sthread.Dependencies.ToArray());
        }

        using var plain = server.PlainClient().AddAsync(new AddRequest { Amount = 1 });
        while (a.Value != 5)
        {
            await Task.Yield();
        }

        Assert.False(plain.ResponseAsync.IsCompleted);

        // A's version also holds the speculative call, which depends on the client's state: both must persist.
        await client.AdvanceVersionAsync();
        await a.AdvanceVersionAsync();
        var held = await plain.ResponseAsync;
        Assert.True(a.CommittedVersion >= held.Version);
    }

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
