using System.Globalization;
using Dse.Darq.Grpc.V1;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;

namespace Dse.Darq.Grpc.Tests;

public sealed class OperatorCallsTests
{
    private static readonly Action<DarqGrpcServiceOptions> Enabled = o => o.EnableOperatorCalls = true;

    [Fact]
    public async Task RetryParkedDelivery_OverGrpcAfterTheDestinationWasFixed_DeliversEverythingInOrder()
    {
        // "b" points at a DARQ B's server does not host (NOT_FOUND): parked until the operator fixes it and retries.
        await using var source = await ParkedSource.StartAsync(Enabled, remoteName: "nope", configureB: null, "1".Bytes(), "2".Bytes());
        var admin = new DarqAdminClient(source.ServerA.Channel, "a");

        var listed = await admin.ListParkedDeliveriesAsync();
        var parked = Assert.Single(listed.Parked);
        Assert.Equal("b", parked.Destination);
        Assert.Equal(source.OutLsns[0], parked.Lsn);
        Assert.Contains("NotFound", parked.Reason, StringComparison.Ordinal);
        Assert.Equal(1, parked.Refusals);
        Assert.Equal(Assert.Single(source.A.ParkedDeliveries), parked);
        Assert.Equal(2, listed.PendingOutCount);
        Assert.False(await admin.RetryParkedDeliveryAsync("nobody"));

        source.Destinations.Add("b", new GrpcDarqDestination(source.ChannelToB, remoteName: "b"));
        Assert.True(await admin.RetryParkedDeliveryAsync("b"));
        await source.A.WaitForDeliveredAsync(source.OutLsns[1]).AsTask().WaitAsync(TestText.Timeout);

        Assert.Equal(["1", "2"], await source.ReceivedByBAsync());
        var after = await admin.ListParkedDeliveriesAsync();
        Assert.Empty(after.Parked);
        Assert.Equal(0, after.PendingOutCount);
        await source.ServerA.Logs.WaitForAsync(4241, "'b'").WaitAsync(TestText.Timeout);
    }

    [Fact]
    public async Task ListParkedDeliveries_TwoDestinationsOneParked_ReportsTheParkedDestinationsOwnPendingCount()
    {
        // "b" is parked (B's server does not host "nope") with two messages; "c" is unknown to A, so its message is
        // pending and retried, not parked. Nothing can change either count until the operator acts.
        await using var source = await ParkedSource.StartAsync(Enabled, remoteName: "nope", configureB: null,
            [("b", "1".Bytes()), ("c", "x".Bytes()), ("b", "2".Bytes())]);
        var admin = new DarqAdminClient(source.ServerA.Channel, "a");
        var client = new DarqService.DarqServiceClient(source.ServerA.Channel);

        var listed = await admin.ListParkedDeliveriesAsync();
        var reply = await client.ListParkedDeliveriesAsync(new ListParkedDeliveriesRequest { Darq = "a" });

        Assert.Equal("b", Assert.Single(listed.Parked).Destination);
        Assert.Equal(2, Assert.Single(listed.PendingOutCountByDestination, p => p.Key == "b").Value);
        Assert.Single(listed.PendingOutCountByDestination);
        Assert.Equal(3, listed.PendingOutCount);
        var parked = Assert.Single(reply.Parked);
        Assert.True(parked.HasPendingOutCount);
        Assert.Equal(2, parked.PendingOutCount);
        Assert.Equal(3, reply.PendingOutCount);
        Assert.Equal(2, await source.A.PendingOutCountAsync("b"));
        Assert.Equal(1, await source.A.PendingOutCountAsync("c"));

        // Fixed and retried: "b" is no longer listed, and the whole-DARQ count is what "c" still holds.
        source.Destinations.Add("b", new GrpcDarqDestination(source.ChannelToB, remoteName: "b"));
        Assert.True(await admin.RetryParkedDeliveryAsync("b"));
        await source.A.WaitForDeliveredAsync(source.OutLsns[2]).AsTask().WaitAsync(TestText.Timeout);
        var after = await admin.ListParkedDeliveriesAsync();
        Assert.Empty(after.Parked);
        Assert.Empty(after.PendingOutCountByDestination);
        Assert.Equal(1, after.PendingOutCount);
    }

    [Fact]
    public async Task ListParkedDeliveriesAsync_ServerWithoutThePerDestinationCount_LeavesTheDestinationOutInsteadOfZero()
    {
        await using var darq = await new TestStorage("a").OpenAsync();
        await using var server = await DarqServer.StartAsync(0, configureServices: null, map: app => app.MapGrpcService<ServerWithoutParkedCounts>(), darq);
        var admin = new DarqAdminClient(server.Channel, "a");

        var listed = await admin.ListParkedDeliveriesAsync();

        Assert.Equal("b", Assert.Single(listed.Parked).Destination);
        Assert.Empty(listed.PendingOutCountByDestination);
        Assert.Equal(ServerWithoutParkedCounts.PendingOutCount, listed.PendingOutCount);
    }

    [Fact]
    public async Task DiscardOut_OverGrpcForAMessageTheDestinationNeverTakes_LetsTheNextOneThroughOnce()
    {
        // B takes at most 16 bytes: the first message is refused for good (INVALID_ARGUMENT) and holds up the second.
        var big = new byte[64];
        await using var source = await ParkedSource.StartAsync(Enabled, remoteName: null, configureB: o => o.MaxMessageSize = 16, big, "after".Bytes());
        var admin = new DarqAdminClient(source.ServerA.Channel, "a");
        var parked = Assert.Single((await admin.ListParkedDeliveriesAsync()).Parked);
        Assert.Contains("InvalidArgument", parked.Reason, StringComparison.Ordinal);

        Assert.True(await admin.DiscardOutAsync(parked.Lsn));
        await source.A.WaitForDeliveredAsync(source.OutLsns[1]).AsTask().WaitAsync(TestText.Timeout);

        Assert.Equal(["after"], await source.ReceivedByBAsync());
        var after = await admin.ListParkedDeliveriesAsync();
        Assert.Empty(after.Parked);
        Assert.Equal(0, after.PendingOutCount);

        // Given up once: a second discard (a resend after a lost reply, say) finds nothing pending and changes nothing.
        long tail = source.A.TailAddress;
        Assert.False(await admin.DiscardOutAsync(parked.Lsn));
        Assert.Equal(tail, source.A.TailAddress);
        await source.ServerA.Logs.WaitForAsync(4242, $"message {parked.Lsn}").WaitAsync(TestText.Timeout);
    }

    [Fact]
    public async Task RetireProducer_OverGrpc_FreesTheSlotDurablyAndAnUnknownProducerChangesNothing()
    {
        await using var darq = await new TestStorage("orders").OpenAsync(o => o.MaxProducers = 2);
        await using var server = await DarqServer.StartAsync(o => o.EnableOperatorCalls = true, darq);
        await new RemoteDarqProducer(server.Channel, "orders", producerId: 1).EnqueueAsync("a".Bytes());
        await new RemoteDarqProducer(server.Channel, "orders", producerId: 2).EnqueueAsync("b".Bytes());
        var third = new RemoteDarqProducer(server.Channel, "orders", producerId: 3);
        var full = await Assert.ThrowsAsync<RpcException>(() => third.EnqueueAsync("c".Bytes()));
        Assert.Equal(StatusCode.FailedPrecondition, full.StatusCode);
        var admin = new DarqAdminClient(server.Channel, "orders");

        var (retired, count) = await admin.RetireProducerAsync(1);
        var (unknown, countAfter) = await admin.RetireProducerAsync(42);

        Assert.True(retired);
        Assert.Equal(1, count);
        Assert.False(unknown);
        Assert.Equal(1, countAfter);
        Assert.Null(await darq.ProducerSequenceAsync(1));
        Assert.False((await third.EnqueueAsync(2, "c".Bytes())).IsDuplicate);
        await server.Logs.WaitForAsync(4243, "retired producer 1 (retired: True)").WaitAsync(TestText.Timeout);
    }

    [Fact]
    public async Task OperatorCalls_BadInput_AreRefusedWithPreciseStatusesAndChangeNothing()
    {
        await using var source = await ParkedSource.StartAsync(Enabled, remoteName: "nope", configureB: null, "1".Bytes());
        var client = new DarqService.DarqServiceClient(source.ServerA.Channel);
        var admin = new DarqAdminClient(source.ServerA.Channel, "a");
        var parkedBefore = source.A.ParkedDeliveries;
        long tail = source.A.TailAddress;

        var unknown = new[]
        {
            await Assert.ThrowsAsync<RpcException>(async () => await client.ListParkedDeliveriesAsync(new ListParkedDeliveriesRequest { Darq = "c" })),
            await Assert.ThrowsAsync<RpcException>(async () => await client.RetryParkedDeliveryAsync(new RetryParkedDeliveryRequest { Darq = "c", Destination = "b" })),
            await Assert.ThrowsAsync<RpcException>(async () => await client.DiscardOutAsync(new DiscardOutRequest { Darq = "c", Lsn = source.OutLsns[0] })),
        };
        var invalid = new[]
        {
            await Assert.ThrowsAsync<RpcException>(async () => await client.ListParkedDeliveriesAsync(new ListParkedDeliveriesRequest())),
            await Assert.ThrowsAsync<RpcException>(async () => await client.RetryParkedDeliveryAsync(new RetryParkedDeliveryRequest { Darq = "a" })),
            await Assert.ThrowsAsync<RpcException>(async () => await client.DiscardOutAsync(new DiscardOutRequest { Darq = "a", Lsn = -1 })),
        };
        // An LSN that is no pending OUT message: the step's completion entry, and one far beyond the tail.
        var notPending = new[]
        {
            await Assert.ThrowsAsync<RpcException>(async () => await client.DiscardOutAsync(new DiscardOutRequest { Darq = "a", Lsn = source.CompletionLsn })),
            await Assert.ThrowsAsync<RpcException>(async () => await client.DiscardOutAsync(new DiscardOutRequest { Darq = "a", Lsn = tail + (1L << 40) })),
        };

        Assert.All(unknown, e => Assert.Equal(StatusCode.NotFound, e.StatusCode));
        Assert.All(unknown, e => Assert.Contains("'c'", e.Status.Detail, StringComparison.Ordinal));
        Assert.All(unknown, e => Assert.Null(e.Trailers.GetValue(DarqRpcErrors.ErrorKey)));
        Assert.All(invalid, e => Assert.Equal(StatusCode.InvalidArgument, e.StatusCode));
        Assert.Contains("darq is empty", invalid[0].Status.Detail, StringComparison.Ordinal);
        Assert.Contains("destination is empty", invalid[1].Status.Detail, StringComparison.Ordinal);
        Assert.Contains("lsn is -1", invalid[2].Status.Detail, StringComparison.Ordinal);
        Assert.All(notPending, e => Assert.Equal(StatusCode.NotFound, e.StatusCode));
        Assert.All(notPending, e => Assert.Equal(DarqRpcErrors.NotPending, e.Trailers.GetValue(DarqRpcErrors.ErrorKey)));
        Assert.Equal(source.CompletionLsn.ToString(CultureInfo.InvariantCulture), notPending[0].Trailers.GetValue(DarqRpcErrors.LsnKey));
        Assert.Contains("no pending OUT message", notPending[0].Status.Detail, StringComparison.Ordinal);

        // The client: not pending is false, as on the Darq; bad arguments are refused before anything is sent.
        Assert.False(await admin.DiscardOutAsync(source.CompletionLsn));
        await Assert.ThrowsAsync<ArgumentOutOfRangeException>(() => admin.DiscardOutAsync(-1));
        await Assert.ThrowsAsync<ArgumentException>(() => admin.RetryParkedDeliveryAsync(""));
        Assert.Throws<ArgumentException>(() => new DarqAdminClient(source.ServerA.Channel, ""));
        var wrongDarq = await Assert.ThrowsAsync<RpcException>(() => new DarqAdminClient(source.ServerA.Channel, "c").ListParkedDeliveriesAsync());
        Assert.Equal(StatusCode.NotFound, wrongDarq.StatusCode);

        Assert.Equal(tail, source.A.TailAddress);
        Assert.Equal(parkedBefore, source.A.ParkedDeliveries);
        Assert.Equal(1, source.A.PendingOutCount);
    }

    [Fact]
    public async Task OperatorCalls_NotEnabled_AreUnimplementedNamingTheOptionAndChangeNothing()
    {
        await using var source = await ParkedSource.StartAsync(configure: null, remoteName: "nope", configureB: null, "1".Bytes());
        var admin = new DarqAdminClient(source.ServerA.Channel, "a");
        var parkedBefore = source.A.ParkedDeliveries;
        long tail = source.A.TailAddress;

        var errors = new[]
        {
            await Assert.ThrowsAsync<RpcException>(() => admin.ListParkedDeliveriesAsync()),
            await Assert.ThrowsAsync<RpcException>(() => admin.RetryParkedDeliveryAsync("b")),
            await Assert.ThrowsAsync<RpcException>(() => admin.DiscardOutAsync(source.OutLsns[0])),
            await Assert.ThrowsAsync<RpcException>(() => admin.RetireProducerAsync(1)),
            // Not even whether a DARQ exists is told.
            await Assert.ThrowsAsync<RpcException>(() => new DarqAdminClient(source.ServerA.Channel, "c").ListParkedDeliveriesAsync()),
        };

        Assert.All(errors, e => Assert.Equal(StatusCode.Unimplemented, e.StatusCode));
        Assert.All(errors, e => Assert.Contains(nameof(DarqGrpcServiceOptions.EnableOperatorCalls), e.Status.Detail, StringComparison.Ordinal));
        Assert.Equal(tail, source.A.TailAddress);
        Assert.Equal(parkedBefore, source.A.ParkedDeliveries);
        Assert.Equal(1, source.A.PendingOutCount);
    }

    [Fact]
    public async Task OperatorCalls_AuthorizeRefusesTheCaller_ArePermissionDeniedAndChangeNothing()
    {
        await using var source = await ParkedSource.StartAsync(
            o =>
            {
                o.EnableOperatorCalls = true;
                o.AuthorizeOperatorCall = context => ValueTask.FromResult(context.RequestHeaders.GetValue("x-operator") == "alice");
            },
            remoteName: null, configureB: o => o.MaxMessageSize = 16, new byte[64]);
        var stranger = new DarqAdminClient(source.ServerA.Channel, "a");
        var alice = new DarqAdminClient(source.ServerA.Channel.Intercept(headers =>
        {
            headers.Add("x-operator", "alice");
            return headers;
        }), "a");
        long tail = source.A.TailAddress;

        var errors = new[]
        {
            await Assert.ThrowsAsync<RpcException>(() => stranger.ListParkedDeliveriesAsync()),
            await Assert.ThrowsAsync<RpcException>(() => stranger.RetryParkedDeliveryAsync("b")),
            await Assert.ThrowsAsync<RpcException>(() => stranger.DiscardOutAsync(source.OutLsns[0])),
            await Assert.ThrowsAsync<RpcException>(() => stranger.RetireProducerAsync(1)),
        };

        Assert.All(errors, e => Assert.Equal(StatusCode.PermissionDenied, e.StatusCode));
        Assert.All(errors, e => Assert.Contains(nameof(DarqGrpcServiceOptions.AuthorizeOperatorCall), e.Status.Detail, StringComparison.Ordinal));
        Assert.Equal(tail, source.A.TailAddress);
        Assert.Equal(1, source.A.PendingOutCount);
        foreach (string method in new[] { "ListParkedDeliveries", "RetryParkedDelivery", "DiscardOut", "RetireProducer" })
        {
            await source.ServerA.Logs.WaitForAsync(4240, $"DarqService.{method} ").WaitAsync(TestText.Timeout);
        }

        Assert.Single((await alice.ListParkedDeliveriesAsync()).Parked);
        Assert.True(await alice.DiscardOutAsync(source.OutLsns[0]));
        Assert.Equal(0, source.A.PendingOutCount);
    }

    /// <summary>
    /// Source DARQ "a" (served with the given options) whose OUT messages to "b" are refused for good by B's server: the
    /// first one is parked when this returns. Automatic retries are off.
    /// </summary>
    private sealed class ParkedSource : IAsyncDisposable
    {
        private ParkedSource(Darq b, DarqServer serverB, GrpcChannel channelToB, DarqDestinationRegistry destinations)
        {
            B = b;
            ServerB = serverB;
            ChannelToB = channelToB;
            Destinations = destinations;
        }

        public Darq B { get; }

        public DarqServer ServerB { get; }

        public GrpcChannel ChannelToB { get; }

        public DarqDestinationRegistry Destinations { get; }

        public Darq A { get; private set; } = null!;

        public DarqServer ServerA { get; private set; } = null!;

        public IReadOnlyList<long> OutLsns { get; private set; } = [];

        public long CompletionLsn { get; private set; }

        public static Task<ParkedSource> StartAsync(Action<DarqGrpcServiceOptions>? configure, string? remoteName, Action<DarqOptions>? configureB,
            params ReadOnlyMemory<byte>[] outs)
        {
            var toB = new (string Destination, ReadOnlyMemory<byte> Payload)[outs.Length];
            for (int i = 0; i < outs.Length; i++)
            {
                toB[i] = ("b", outs[i]);
            }

            return StartAsync(configure, remoteName, configureB, toB);
        }

        /// <summary>As above, with OUT messages to any destinations; the first one must go to "b" (it is the one parked).</summary>
        public static async Task<ParkedSource> StartAsync(Action<DarqGrpcServiceOptions>? configure, string? remoteName, Action<DarqOptions>? configureB,
            IReadOnlyList<(string Destination, ReadOnlyMemory<byte> Payload)> outs)
        {
            Assert.Equal("b", outs[0].Destination);
            var b = await new TestStorage("b").OpenAsync(configureB);
            var serverB = await DarqServer.StartAsync(b);
            var channelToB = GrpcChannel.ForAddress(serverB.Address);
            var destinations = new DarqDestinationRegistry();
            destinations.Add("b", new GrpcDarqDestination(channelToB, remoteName));
            var source = new ParkedSource(b, serverB, channelToB, destinations);
            try
            {
                source.A = await new TestStorage("a").OpenAsync(o =>
                {
                    o.Destinations = destinations;
                    o.ParkedDeliveryRetryInterval = Timeout.InfiniteTimeSpan;
                });
                source.ServerA = configure is null ? await DarqServer.StartAsync(source.A) : await DarqServer.StartAsync(configure, source.A);
                var step = new DarqStep();
                foreach (var (destination, payload) in outs)
                {
                    step.AddOut(destination, payload);
                }

                var result = await (await source.A.RegisterProcessorAsync()).StepAsync(step);
                source.OutLsns = result.OutLsns;
                source.CompletionLsn = result.CompletionLsn;
                await source.A.CommitAsync();
                await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => source.A.WaitForDeliveredAsync(result.OutLsns[0]).AsTask().WaitAsync(TestText.Timeout));
                return source;
            }
            catch
            {
                await source.DisposeAsync();
                throw;
            }
        }

        /// <summary>The messages B holds, in order.</summary>
        public async Task<List<string>> ReceivedByBAsync()
        {
            var received = new List<string>();
            var processor = await B.RegisterProcessorAsync();
            while (processor.Messages.TryRead(out var message))
            {
                received.Add(message.Text());
            }

            return received;
        }

        public async ValueTask DisposeAsync()
        {
            if (ServerA is not null)
            {
                await ServerA.DisposeAsync();
            }

            if (A is not null)
            {
                await A.DisposeAsync();
            }

            ChannelToB.Dispose();
            await ServerB.DisposeAsync();
            await B.DisposeAsync();
        }
    }
}
