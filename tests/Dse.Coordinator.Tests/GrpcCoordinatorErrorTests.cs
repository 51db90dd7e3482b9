using Dse.Coordinator.Client;
using Dse.Coordinator.Tests.Infrastructure;
using Dse.Testing;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Net.Client;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Coordinator.Tests;

/// <summary>
/// Refusals over gRPC: each <see cref="CoordinatorErrorCode"/> comes back as the same code and message with its
/// status; transport failures come back as Unavailable; bytes and fields that break the wire contract are refused
/// before the coordinator sees them, and change nothing.
/// </summary>
public sealed class GrpcCoordinatorErrorTests
{
    [Fact]
    public async Task InvalidRequest_FromTheCoordinator_SameCodeAndMessage()
    {
        await using var server = await StartAsync();
        var listing = new ConnectRequest(4, [new VersionReport(2, 0, []), new VersionReport(1, 0, [])]);
        var expected = await Assert.ThrowsAsync<DseCoordinatorException>(() => new ClusterCoordinator().ConnectAsync(listing).AsTask());

        var error = await RefusedAsync(server, c => c.ConnectAsync(listing).AsTask(), CoordinatorErrorCode.InvalidRequest, StatusCode.InvalidArgument);

        Assert.Equal(expected.Message, error.Message);
    }

    [Fact]
    public async Task InvalidRequest_FromFieldChecks_NamesTheField()
    {
        await using var server = await StartAsync();
        await server.CreateClient().ConnectAsync(new ConnectRequest(1, []));

        var error = await RefusedAsync(server, c => c.ReportPersistedAsync(1, new VersionReport(0, 0, [])).AsTask(), CoordinatorErrorCode.InvalidRequest, StatusCode.InvalidArgument);

        Assert.Equal("ReportPersistedRequest.report.version is 0; versions start at 1.", error.Message);
    }

    [Fact]
    public async Task UnknownParticipant_SameCodeAndMessage()
    {
        await using var server = await StartAsync();
        var expected = await Assert.ThrowsAsync<DseCoordinatorException>(() => server.Coordinator.HeartbeatAsync(42).AsTask());

        var error = await RefusedAsync(server, c => c.HeartbeatAsync(42).AsTask(), CoordinatorErrorCode.UnknownParticipant, StatusCode.NotFound);

        Assert.Equal(expected.Message, error.Message);
    }

    [Fact]
    public async Task FutureWorldLine_SameCodeAndMessage()
    {
        await using var server = await StartAsync();
        await server.CreateClient().ConnectAsync(new ConnectRequest(1, []));

        var error = await RefusedAsync(server, c => c.ReportPersistedAsync(1, new VersionReport(1, 5, [])).AsTask(), CoordinatorErrorCode.FutureWorldLine, StatusCode.OutOfRange);

        Assert.Equal("Participant 1 reported version 1 from world-line 5, ahead of the coordinator's 0.", error.Message);
    }

    [Fact]
    public async Task Removed_SameCodeAndMessage()
    {
        await using var server = await StartAsync();
        await server.CreateClient().ConnectAsync(new ConnectRequest(1, []));
        Assert.True(await server.Coordinator.RemoveParticipantAsync(1));
        var expected = await Assert.ThrowsAsync<DseCoordinatorException>(() => server.Coordinator.HeartbeatAsync(1).AsTask());

        var error = await RefusedAsync(server, c => c.HeartbeatAsync(1).AsTask(), CoordinatorErrorCode.Removed, StatusCode.FailedPrecondition);

        Assert.Equal(expected.Message, error.Message);
    }

    [Fact]
    public async Task ResyncRequired_AfterCoordinatorRestart_SameCode()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using (var first = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store)))
        {
            await first.CreateClient().ConnectAsync(new ConnectRequest(1, []));
        }

        await using var second = await CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store));

        var error = await RefusedAsync(second, c => c.ReportPersistedAsync(1, new VersionReport(1, 0, [])).AsTask(), CoordinatorErrorCode.ResyncRequired, StatusCode.Aborted);

        Assert.Contains("must resync", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Unavailable_JournalFailed_SameCodeForThisAndEveryLaterCall()
    {
        var log = new FaultyCoordinatorLog(new InMemoryCoordinatorLogStore());
        await using var server = await CoordinatorTestServer.StartAsync(() => log);
        log.FailAppends = true;

        var error = await RefusedAsync(server, c => c.ConnectAsync(new ConnectRequest(1, [])).AsTask(), CoordinatorErrorCode.Unavailable, StatusCode.Unavailable);
        var later = await RefusedAsync(server, c => c.GetStateAsync().AsTask(), CoordinatorErrorCode.Unavailable, StatusCode.Unavailable);

        Assert.Contains("could not make a cluster change durable", error.Message, StringComparison.Ordinal);
        Assert.Contains("journal failed", later.Message, StringComparison.Ordinal);
        Assert.IsType<IOException>(server.Coordinator.Fault);
    }

    [Fact]
    public async Task NotExpected_ColdStartOfOtherParticipants_SameCode()
    {
        await using var server = await StartAsync(o => o.ExpectedParticipants = [1, 2]);

        var error = await RefusedAsync(server, c => c.ConnectAsync(new ConnectRequest(3, [])).AsTask(), CoordinatorErrorCode.NotExpected, StatusCode.PermissionDenied);

        Assert.Contains("not among the expected participants", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task TransportFailure_ConnectionReset_Unavailable()
    {
        // A listener that resets every connection holds its port for the whole test, unlike a port released to probe
        // for "nothing listening", which another process could take meanwhile.
        using var crashed = RawTcpServer.Resetting();
        using var client = new GrpcCoordinatorClient(crashed.Address);

        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.GetStateAsync().AsTask());

        Assert.Equal(CoordinatorErrorCode.Unavailable, error.Code);
        var rpc = Assert.IsType<RpcException>(error.InnerException);
        Assert.Equal(StatusCode.Unavailable, rpc.StatusCode);
        Assert.Contains(crashed.Address.Authority, error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task DeadlinePassed_SilentCoordinator_UnavailableNotOperationCanceled()
    {
        // Accepts the connection and never answers, like a paused or overloaded coordinator: only the deadline ends
        // the calls, and a passed deadline is an outage the runtime retries.
        using var silent = RawTcpServer.Silent();
        using var client = new GrpcCoordinatorClient(silent.Address, new GrpcCoordinatorClientOptions
        {
            CallTimeout = TimeSpan.FromMilliseconds(200),
            LongPollWait = TimeSpan.FromMilliseconds(200),
        });

        var heartbeat = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.HeartbeatAsync(1).AsTask());
        var poll = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.WaitForChangeAsync(0).AsTask());

        foreach (var error in new[] { heartbeat, poll })
        {
            Assert.Equal(CoordinatorErrorCode.Unavailable, error.Code);
            Assert.Equal(StatusCode.DeadlineExceeded, Assert.IsType<RpcException>(error.InnerException).StatusCode);
        }
    }

    [Fact]
    public async Task DeadlinePassed_CallerChannelThrowingOperationCanceled_Unavailable()
    {
        // A caller-owned channel with ThrowOperationCanceledOnCancellation reports the deadline as an
        // OperationCanceledException; the caller's token was not cancelled, so it is still an outage.
        using var silent = RawTcpServer.Silent();
        using var channel = GrpcChannel.ForAddress(silent.Address, new GrpcChannelOptions { ThrowOperationCanceledOnCancellation = true });
        using var client = new GrpcCoordinatorClient(channel, new GrpcCoordinatorClientOptions { CallTimeout = TimeSpan.FromMilliseconds(200) });

        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.HeartbeatAsync(1).AsTask());

        Assert.Equal(CoordinatorErrorCode.Unavailable, error.Code);
        Assert.IsAssignableFrom<OperationCanceledException>(error.InnerException);
    }

    [Fact]
    public async Task CallerCancels_SilentCoordinator_OperationCanceled()
    {
        using var silent = RawTcpServer.Silent();
        using var client = new GrpcCoordinatorClient(silent.Address, new GrpcCoordinatorClientOptions { CallTimeout = TimeSpan.FromMinutes(10) });
        using var cancel = new CancellationTokenSource();

        var heartbeat = client.HeartbeatAsync(1, cancel.Token).AsTask();
        await silent.FirstAccepted;
        await cancel.CancelAsync();

        var error = await Assert.ThrowsAnyAsync<OperationCanceledException>(() => heartbeat);
        Assert.Equal(cancel.Token, error.CancellationToken);
    }

    [Fact]
    public async Task MessageOverTheServerLimit_InvalidRequestNamingTheLimitAndNothingChanges()
    {
        await using var server = await StartAsync(o => o.MaxMessageSize = 16 * 1024);
        var before = server.Coordinator.State;

        // About 40 KB: 2,000 versions of about 20 bytes each.
        var listing = new ConnectRequest(1, [.. Enumerable.Range(1, 2_000).Select(v => new VersionReport(v, 0, [new Dependency(2, 1_000_000 + v)]))]);
        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => server.CreateClient().ConnectAsync(listing).AsTask());

        Assert.Equal(CoordinatorErrorCode.InvalidRequest, error.Code);
        Assert.Equal(StatusCode.ResourceExhausted, Assert.IsType<RpcException>(error.InnerException).StatusCode);
        Assert.Contains("--max-message-size", error.Message, StringComparison.Ordinal);
        Assert.Contains("GrpcCoordinatorClientOptions.MaxMessageSize", error.Message, StringComparison.Ordinal);
        await AssertUnchangedAsync(server, before);
    }

    [Fact]
    public async Task MessageOverTheClientLimit_InvalidRequestNamingTheLimit()
    {
        await using var server = await StartAsync();
        var before = server.Coordinator.State;
        var client = server.CreateClient(new GrpcCoordinatorClientOptions { MaxMessageSize = 16 * 1024 });

        var listing = new ConnectRequest(1, [.. Enumerable.Range(1, 2_000).Select(v => new VersionReport(v, 0, [new Dependency(2, 1_000_000 + v)]))]);
        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => client.ConnectAsync(listing).AsTask());

        Assert.Equal(CoordinatorErrorCode.InvalidRequest, error.Code);
        Assert.Contains("MaxMessageSize (16384 bytes)", error.Message, StringComparison.Ordinal);
        await AssertUnchangedAsync(server, before);
    }

    [Fact]
    public async Task RemoveParticipant_UnknownId_UnknownParticipantNotFound()
    {
        await using var server = await StartAsync();
        var expected = await Assert.ThrowsAsync<DseCoordinatorException>(() => server.Coordinator.RemoveParticipantAsync(42));

        var error = await RefusedAsync(server, c => c.RemoveParticipantAsync(42), CoordinatorErrorCode.UnknownParticipant, StatusCode.NotFound);

        Assert.Equal(expected.Message, error.Message);
    }

    [Theory]
    [InlineData("Connect")]
    [InlineData("ReportPersisted")]
    [InlineData("Resync")]
    [InlineData("WaitForChange")]
    [InlineData("RemoveParticipant")]
    public async Task GarbledBytes_AnyMethod_InvalidArgumentAndNothingChanges(string method)
    {
        await using var server = await StartAsync();
        await server.CreateClient().ConnectAsync(new ConnectRequest(1, []));
        var before = server.Coordinator.State;

        // A varint that never ends: not a protobuf message of any type.
        var error = await RawCalls.RefusedAsync(server.Channel, method, [0x08, 0xFF, 0xFF, 0xFF, 0xFF]);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Equal(nameof(CoordinatorErrorCode.InvalidRequest), error.Trailers.GetValue(GrpcCoordinatorClient.ErrorCodeTrailer));
        Assert.StartsWith($"/dse.coordinator.v1.Coordinator/{method}: the request is not a valid {method}Request message: ", error.Status.Detail, StringComparison.Ordinal);
        BadInputLogging.AssertNone(server.Logs);
        await AssertUnchangedAsync(server, before);
    }

    public static TheoryData<string, byte[]> WithoutParticipantId => new()
    {
        { "Connect", new Wire.ConnectRequest().ToByteArray() },
        { "ReportPersisted", new Wire.ReportPersistedRequest { Report = new Wire.VersionReport { Version = 1 } }.ToByteArray() },
        { "AcknowledgeRollback", new Wire.AcknowledgeRollbackRequest { WorldLine = 1 }.ToByteArray() },
        { "Resync", new Wire.ResyncRequest().ToByteArray() },
        { "Heartbeat", new Wire.HeartbeatRequest().ToByteArray() },
        { "RemoveParticipant", new Wire.RemoveParticipantRequest().ToByteArray() },
    };

    /// <summary>
    /// Proto3 reads an absent id as 0, a valid one: bytes that happen to parse (an empty message) would restart or remove
    /// participant 0. Participant 0 is connected first, by the client, which writes id 0 on the wire.
    /// </summary>
    [Theory]
    [MemberData(nameof(WithoutParticipantId))]
    public async Task ParticipantIdAbsent_RequestNamingAParticipant_InvalidArgumentAndParticipantZeroUntouched(string method, byte[] request)
    {
        await using var server = await StartAsync();
        await server.CreateClient().ConnectAsync(new ConnectRequest(0, []));
        await server.CreateClient().ConnectAsync(new ConnectRequest(1, []));
        var before = server.Coordinator.State;

        var error = await RawCalls.RefusedAsync(server.Channel, method, request);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Equal(nameof(CoordinatorErrorCode.InvalidRequest), error.Trailers.GetValue(GrpcCoordinatorClient.ErrorCodeTrailer));
        Assert.Equal($"{method}Request.object_id is missing; a request names its participant, id 0 included.", error.Status.Detail);
        await AssertUnchangedAsync(server, before);
        await server.CreateClient().HeartbeatAsync(0);
    }

    public static TheoryData<string, byte[], string> InvalidFields => new()
    {
        { "Connect", new Wire.ConnectRequest { ObjectId = -1 }.ToByteArray(), "ConnectRequest.object_id is -1; participant ids are non-negative." },
        {
            "Connect",
            new Wire.ConnectRequest { ObjectId = 1, PersistedVersions = { new Wire.VersionReport { Version = 1 }, new Wire.VersionReport { Version = 2, WorldLine = -3 } } }.ToByteArray(),
            "ConnectRequest.persisted_versions[1].world_line is -3; world-lines are non-negative."
        },
        { "ReportPersisted", new Wire.ReportPersistedRequest { ObjectId = 1 }.ToByteArray(), "ReportPersistedRequest.report is missing." },
        {
            "ReportPersisted",
            new Wire.ReportPersistedRequest { ObjectId = 1, Report = new Wire.VersionReport { Version = 1, Dependencies = { new Wire.ObjectVersion { ObjectId = 2, Version = 1 }, new Wire.ObjectVersion { ObjectId = 2, Version = 3 } } } }.ToByteArray(),
            "ReportPersistedRequest.report.dependencies lists participant 2 twice; a fragment has one entry per participant."
        },
        {
            "ReportPersisted",
            new Wire.ReportPersistedRequest { ObjectId = 1, Report = new Wire.VersionReport { Version = 1, Dependencies = { new Wire.ObjectVersion { ObjectId = -2, Version = 1 } } } }.ToByteArray(),
            "ReportPersistedRequest.report.dependencies[0].object_id is -2; participant ids are non-negative."
        },
        {
            "Resync",
            new Wire.ResyncRequest { ObjectId = 1, CommittedView = { new Wire.ObjectVersion { ObjectId = 1, Version = 1 }, new Wire.ObjectVersion { ObjectId = 1, Version = 2 } } }.ToByteArray(),
            "ResyncRequest.committed_view lists participant 1 twice."
        },
        { "AcknowledgeRollback", new Wire.AcknowledgeRollbackRequest { ObjectId = 1, WorldLine = 1, KeptThrough = -1 }.ToByteArray(), "AcknowledgeRollbackRequest.kept_through is -1; versions are non-negative." },
        { "Heartbeat", new Wire.HeartbeatRequest { ObjectId = -9 }.ToByteArray(), "HeartbeatRequest.object_id is -9; participant ids are non-negative." },
        { "WaitForChange", new Wire.WaitForChangeRequest { KnownEpoch = -1 }.ToByteArray(), "WaitForChangeRequest.known_epoch is -1; epochs are non-negative." },
        { "RemoveParticipant", new Wire.RemoveParticipantRequest { ObjectId = -4 }.ToByteArray(), "RemoveParticipantRequest.object_id is -4; participant ids are non-negative." },
        { "Resync", new Wire.ResyncRequest { ObjectId = 1, WorldLine = -1 }.ToByteArray(), "ResyncRequest.world_line is -1; world-lines are non-negative." },
        {
            "WaitForChange",
            new Wire.WaitForChangeRequest { MaxWait = new Google.Protobuf.WellKnownTypes.Duration { Seconds = -1 } }.ToByteArray(),
            "WaitForChangeRequest.max_wait is -00:00:01; it must not be negative."
        },
    };

    [Theory]
    [MemberData(nameof(InvalidFields))]
    public async Task InvalidField_HandMadeMessage_InvalidArgumentNamingItAndNothingChanges(string method, byte[] request, string message)
    {
        await using var server = await StartAsync();
        await server.CreateClient().ConnectAsync(new ConnectRequest(1, []));
        var before = server.Coordinator.State;

        var error = await RawCalls.RefusedAsync(server.Channel, method, request);

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Equal(nameof(CoordinatorErrorCode.InvalidRequest), error.Trailers.GetValue(GrpcCoordinatorClient.ErrorCodeTrailer));
        Assert.Equal(message, error.Status.Detail);
        await AssertUnchangedAsync(server, before);
    }

    private static Task<CoordinatorTestServer> StartAsync(Action<CoordinatorServerOptions>? configure = null)
    {
        var store = new InMemoryCoordinatorLogStore();
        return CoordinatorTestServer.StartAsync(() => new InMemoryCoordinatorLog(store), configure);
    }

    /// <summary>The call is refused with <paramref name="code"/>, and the gRPC status under it is <paramref name="status"/>.</summary>
    private static async Task<DseCoordinatorException> RefusedAsync(CoordinatorTestServer server, Func<GrpcCoordinatorClient, Task> call, CoordinatorErrorCode code, StatusCode status)
    {
        var error = await Assert.ThrowsAsync<DseCoordinatorException>(() => call(server.CreateClient()));
        Assert.Equal(code, error.Code);
        var rpc = Assert.IsType<RpcException>(error.InnerException);
        Assert.Equal(status, rpc.StatusCode);
        Assert.Equal(error.Message, rpc.Status.Detail);
        return error;
    }

    /// <summary>Same epoch, still serving, and a well-formed call still works.</summary>
    private static async Task AssertUnchangedAsync(CoordinatorTestServer server, ClusterState before)
    {
        Assert.Null(server.Coordinator.Fault);
        StateAssert.Same(before, server.Coordinator.State);
        StateAssert.Same(before, await server.CreateClient().GetStateAsync());
    }
}
