using System.Buffers.Binary;
using Dse.Grpc;
using Dse.Services.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Services.Grpc.Tests;

/// <summary>
/// A forged DSE header of each kind sent to the key-value store (docs/libdse.md, "Header rules"): the implausible kinds
/// are refused with INVALID_ARGUMENT and write nothing; the plausible one (a near-future version of a real, idle
/// participant) is accepted and does not hold the store's versions. Either way the store goes on serving and committing.
/// </summary>
[Trait("Category", "Security")]
public sealed class KvForgedHeaderTests : IAsyncLifetime
{
    private readonly ServicesCluster _cluster = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await _cluster.DisposeAsync();

    public static TheoryData<string, bool> Refused() => new()
    {
        { "negative-id", false }, { "negative-id", true },
        { "unknown-participant", false }, { "unknown-participant", true },
        { "far-future-version", false }, { "far-future-version", true },
        { "future-world-line", false }, { "future-world-line", true },
    };

    [Theory]
    [MemberData(nameof(Refused))]
    public async Task Put_ImplausibleForgedHeader_RefusedAndTheStoreKeepsCommitting(string kind, bool manual)
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        var server = await _cluster.ServeKvAsync(kv, manual);
        await PutAsync(server, kv, "seat", "free");
        long version = kv.CurrentVersion;

        var error = await Assert.ThrowsAsync<RpcException>(() => server.PlainKv().PutAsync(
            new PutRequest { Key = B("seat"), Value = B("forged") }, Forged(kind, client)).ResponseAsync);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Equal(version, kv.CurrentVersion);
        Assert.Equal("free", await KvServiceTests.ReadAsync(kv, "seat"));
        await PutAsync(server, kv, "after", "yes");
        Assert.Equal("yes", await KvServiceTests.ReadAsync(kv, "after"));
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Put_NearFutureVersionOfAnIdleParticipant_AcceptedAndTheStoreStillCommits(bool manual)
    {
        var client = await _cluster.OpenClientAsync(1);
        var kv = await _cluster.OpenKvAsync(2);
        var server = await _cluster.ServeKvAsync(kv, manual);
        await ServicesCluster.CommitAsync(client);
        long forged = client.CurrentVersion + 50;

        await server.PlainKv().PutAsync(new PutRequest { Key = B("seat"), Value = B("near") }, Forged("near-future-version", client)).ResponseAsync;

        // The store's version now depends on a number the idle client never reached; the client persists up to it
        // once the coordinator publishes it, so a plain write (released only when recoverable) still completes.
        await PutAsync(server, kv, "after", "yes");
        Assert.Equal("near", await KvServiceTests.ReadAsync(kv, "seat"));
        Assert.True(kv.ClusterView.CommittedVersion(client.Id) >= forged, $"the client committed {kv.ClusterView.CommittedVersion(client.Id)}, not the forged {forged}");
    }

    private static Metadata Forged(string kind, StateObject client)
    {
        byte[] header = kind switch
        {
            "negative-id" => WithObjectId(DseHeader.FromOrigin(client.Id, 0, 1).ToArray(), -5),
            "unknown-participant" => DseHeader.FromOrigin(999, 0, 1).ToArray(),
            "far-future-version" => DseHeader.FromOrigin(client.Id, 0, 1L << 60).ToArray(),
            "future-world-line" => DseHeader.FromOrigin(client.Id, 50, 1).ToArray(),
            "near-future-version" => DseHeader.FromOrigin(client.Id, 0, client.CurrentVersion + 50).ToArray(),
            _ => throw new ArgumentOutOfRangeException(nameof(kind), kind, null),
        };
        return new Metadata { { DseMetadata.HeaderKey, header } };
    }

    private static byte[] WithObjectId(byte[] origin, long objectId)
    {
        BinaryPrimitives.WriteInt64LittleEndian(origin.AsSpan(DseHeader.PrefixLength), objectId);
        return origin;
    }

    /// <summary>A plain write: its reply is released once the store's version is recoverable, which the test drives.</summary>
    private static async Task PutAsync(ServicesServer server, SpeculativeKv kv, string key, string value)
    {
        using var call = server.PlainKv().PutAsync(new PutRequest { Key = B(key), Value = B(value) }, deadline: DateTime.UtcNow.AddSeconds(60));
        await ServicesCluster.AwaitReleasedAsync(call.ResponseAsync, kv);

        await call.ResponseAsync;
    }

    private static ByteString B(string s) => ByteString.CopyFromUtf8(s);
}
