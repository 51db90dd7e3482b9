using Dse.Grpc;
using Dse.Services.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Services.Grpc.Tests;

/// <summary>The log gRPC API over real gRPC on loopback, with the DSE server interceptor.</summary>
public sealed class LogServiceTests : IAsyncLifetime
{
    private readonly ServicesCluster _cluster = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    [Fact]
    public async Task AppendReadScan_SpeculativeCaller_RoundTripBeforeAndAfterCommit()
    {
        var client = await _cluster.OpenClientAsync(1);
        var log = await _cluster.OpenLogAsync(2);
        var server = await _cluster.ServeLogAsync(log);
        var sthread = await client.NewSthreadAsync();
        using (DseCall.Use(sthread))
        {
            var api = server.DseLog();
            var appended = await api.AppendAsync(new AppendRequest { Entries = { B("a"), B("b"), B("c") } });
            var lsns = appended.Lsns;
            Assert.Equal(3, lsns.Count);
            Assert.True(lsns[0] < lsns[1] && lsns[1] < lsns[2]);
            Assert.Equal("b", (await api.ReadAsync(new ReadRequest { Lsn = lsns[1] })).Data.ToStringUtf8());

            var first = await api.ScanAsync(new ScanRequest { FromLsn = 0, MaxEntries = 2 });
            Assert.Equal(["a", "b"], first.Entries.Select(e => e.Data.ToStringUtf8()));
            Assert.Equal(lsns[2], first.NextLsn);
            var rest = await api.ScanAsync(new ScanRequest { FromLsn = first.NextLsn, MaxEntries = 10 });
            Assert.Equal("c", Assert.Single(rest.Entries).Data.ToStringUtf8());
            var none = await api.ScanAsync(new ScanRequest { FromLsn = rest.NextLsn, MaxEntries = 10 });
            Assert.Empty(none.Entries);
            Assert.Equal(rest.NextLsn, none.NextLsn);

            // Once durable, reads go to FasterLog (an await that may not complete at once: the call detaches).
            await ServicesCluster.CommitAsync(client);
            await ServicesCluster.CommitAsync(log);
            Assert.Equal("a", (await api.ReadAsync(new ReadRequest { Lsn = lsns[0] })).Data.ToStringUtf8());
            Assert.Equal(3, (await api.ScanAsync(new ScanRequest { MaxEntries = 10 })).Entries.Count);
        }

        Assert.Contains(sthread.Dependencies.ToArray(), d => d.ObjectId == log.Id);
    }

    [Fact]
    public async Task BadInput_OversizedEntryBadLsnsAndCounts_ClearStatusesAndNothingAppended()
    {
        var client = await _cluster.OpenClientAsync(1);
        var log = await _cluster.OpenLogAsync(2);
        var server = await _cluster.ServeLogAsync(log);
        using (DseCall.Use(await client.NewSthreadAsync()))
        {
            var api = server.DseLog();
            var lsns = (await api.AppendAsync(new AppendRequest { Entries = { B("x"), B("y") } })).Lsns;
            long tail = log.TailLsn;

            var oversized = await Assert.ThrowsAsync<RpcException>(() => api.AppendAsync(new AppendRequest { Entries = { B("ok"), ByteString.CopyFrom(new byte[1025]) } }).ResponseAsync);
            Assert.Equal(StatusCode.InvalidArgument, oversized.StatusCode);
            Assert.Contains("entry 1 is 1025 bytes", oversized.Status.Detail, StringComparison.Ordinal);
            Assert.Equal(tail, log.TailLsn);

            var empty = await Assert.ThrowsAsync<RpcException>(() => api.AppendAsync(new AppendRequest()).ResponseAsync);
            Assert.Equal(StatusCode.InvalidArgument, empty.StatusCode);

            var beyond = await Assert.ThrowsAsync<RpcException>(() => api.ReadAsync(new ReadRequest { Lsn = tail + 1000 }).ResponseAsync);
            Assert.Equal(StatusCode.OutOfRange, beyond.StatusCode);
            Assert.Contains("beyond the tail", beyond.Status.Detail, StringComparison.Ordinal);

            var negative = await Assert.ThrowsAsync<RpcException>(() => api.ReadAsync(new ReadRequest { Lsn = -1 }).ResponseAsync);
            Assert.Equal(StatusCode.InvalidArgument, negative.StatusCode);

            var noCount = await Assert.ThrowsAsync<RpcException>(() => api.ScanAsync(new ScanRequest { MaxEntries = 0 }).ResponseAsync);
            Assert.Equal(StatusCode.InvalidArgument, noCount.StatusCode);
            Assert.Contains("max_entries", noCount.Status.Detail, StringComparison.Ordinal);

            await log.StartLocalActionAsync();
            log.TruncateBefore(lsns[1]);
            log.EndAction();
            var truncated = await Assert.ThrowsAsync<RpcException>(() => api.ReadAsync(new ReadRequest { Lsn = lsns[0] }).ResponseAsync);
            Assert.Equal(StatusCode.OutOfRange, truncated.StatusCode);
            Assert.Contains("truncated", truncated.Status.Detail, StringComparison.Ordinal);
            Assert.Equal("y", (await api.ReadAsync(new ReadRequest { Lsn = lsns[1] })).Data.ToStringUtf8());
        }
    }

    [Fact]
    public async Task Read_EntryFromLostCallerState_NotFoundAfterRollback()
    {
        var writer = await _cluster.OpenClientAsync(1);
        var log = await _cluster.OpenLogAsync(2);
        var server = await _cluster.ServeLogAsync(log);
        await log.StartLocalActionAsync();
        log.Append("base"u8);
        log.EndAction();
        await ServicesCluster.CommitAsync(log);

        var sthread = await writer.NewSthreadAsync();
        long lost;
        using (DseCall.Use(sthread))
        {
            lost = Assert.Single((await server.DseLog().AppendAsync(new AppendRequest { Entries = { B("speculative") } })).Lsns);
        }

        await log.AdvanceVersionAsync();
        await _cluster.RestartAsync(writer);
        await ServicesCluster.WaitForRollbackAsync(log);

        var reader = await _cluster.OpenClientAsync(3);
        using (DseCall.Use(await reader.NewSthreadAsync()))
        {
            var api = server.DseLog();
            var error = await Assert.ThrowsAsync<RpcException>(() => api.ReadAsync(new ReadRequest { Lsn = lost }).ResponseAsync);
            Assert.Equal(StatusCode.NotFound, error.StatusCode);
            Assert.Contains("rolled back", error.Status.Detail, StringComparison.Ordinal);
            var all = await api.ScanAsync(new ScanRequest { MaxEntries = 10 });
            Assert.Equal("base", Assert.Single(all.Entries).Data.ToStringUtf8());
        }
    }

    /// <summary>
    /// A durable log is read record by record from the scan's start: a start inside an entry is a bad argument, answered
    /// as Read answers it (NOT_FOUND), not as corruption (DATA_LOSS).
    /// </summary>
    [Theory]
    [InlineData(1)]
    [InlineData(4)]
    [InlineData(9)]
    public async Task Scan_FromInsideADurableEntry_NotFoundAsReadAnswers(int offset)
    {
        var client = await _cluster.OpenClientAsync(1);
        var log = await _cluster.OpenLogAsync(2);
        var server = await _cluster.ServeLogAsync(log);
        using (DseCall.Use(await client.NewSthreadAsync()))
        {
            var api = server.DseLog();
            var lsns = (await api.AppendAsync(new AppendRequest { Entries = { B("the first entry, long enough"), B("the second entry") } })).Lsns;
            await ServicesCluster.CommitAsync(client);
            await ServicesCluster.CommitAsync(log);
            long inside = lsns[0] + offset;
            Assert.True(inside < lsns[1]);

            var read = await Assert.ThrowsAsync<RpcException>(() => api.ReadAsync(new ReadRequest { Lsn = inside }).ResponseAsync);
            var scan = await Assert.ThrowsAsync<RpcException>(() => api.ScanAsync(new ScanRequest { FromLsn = inside, MaxEntries = 10 }).ResponseAsync);

            Assert.Equal(StatusCode.NotFound, read.StatusCode);
            Assert.Equal(StatusCode.NotFound, scan.StatusCode);
            Assert.Contains($"'from_lsn' {inside} is not the start of an entry", scan.Status.Detail, StringComparison.Ordinal);
            Assert.Equal(2, (await api.ScanAsync(new ScanRequest { FromLsn = lsns[0], MaxEntries = 10 })).Entries.Count);
            Assert.Equal("the second entry", Assert.Single((await api.ScanAsync(new ScanRequest { FromLsn = lsns[1], MaxEntries = 10 })).Entries).Data.ToStringUtf8());
        }
    }

    private static ByteString B(string s) => ByteString.CopyFromUtf8(s);
}
