using Dse.Darq.Grpc.V1;
using Dse.Storage;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// General speculation across processes: two DARQs as LibDse StateObjects of one embedded <see cref="ClusterCoordinator"/>,
/// each behind its own gRPC server, OUT delivery carrying the DSE headers over the wire.
/// </summary>
public sealed class RemoteSpeculationTests
{
    /// <summary>Background tasks follow the coordinator; the ten-minute period means versions advance only when a test says so.</summary>
    private static Action<DarqOptions> General(long id, IDseCoordinator coordinator, IDarqDestinations? destinations = null) => o =>
    {
        o.Speculation = DarqSpeculationMode.General;
        o.Dse = new DseOptions
        {
            ObjectId = id,
            RunBackgroundTasks = true,
            GroupCommitPeriod = TimeSpan.FromMinutes(10),
            HeartbeatPeriod = TimeSpan.FromMinutes(10),
        };
        o.Coordinator = coordinator;
        o.Destinations = destinations;
        o.DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(1);
        o.DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(5);
    };

    [Fact]
    public async Task Deliver_GeneralOverGrpc_DestinationProcessorSeesMessageBeforeSourceCommits()
    {
        using var guard = new CancellationTokenSource(TestText.Timeout);
        var coordinator = new ClusterCoordinator();
        await using var b = await new TestStorage("b").OpenAsync(General(2, coordinator));
        await using var serverB = await DarqServer.StartAsync(b);
        using var toB = new GrpcDarqDestinations().Add("b", new GrpcDarqDestination(serverB.Channel) { ReceivesSpeculatively = true });
        await using var a = await new TestStorage("a").OpenAsync(General(1, coordinator, toB));
        await using var serverA = await DarqServer.StartAsync(a);
        using var processorB = await RemoteDarqProcessor.RegisterAsync(serverB.Channel, "b", guard.Token);
        await using var inB = processorB.ReadAllAsync(guard.Token).GetAsyncEnumerator(guard.Token);
        using var processorA = await RemoteDarqProcessor.RegisterAsync(serverA.Channel, "a", guard.Token);

        var step = await processorA.StepAsync(new DarqStep().AddOut("b", "x".Bytes()), cancellationToken: guard.Token);
        var received = (await inB.TakeAsync(1))[0];
        await a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token);

        // Neither side committed anything: the message left A, reached B's processor and was acknowledged speculatively.
        Assert.Equal("x", received.Text());
        Assert.True(a.CommittedUntilAddress <= step.OutLsns[0], "the source committed the OUT entry before the destination saw it");
        Assert.True(b.CommittedUntilAddress <= received.Lsn, "the destination committed the message before it acknowledged it");

        // The barrier: the message is recoverable once both sides persisted and the coordinator committed.
        var barrier = b.WaitForRecoverableAsync(received.Lsn, guard.Token).AsTask();
        Assert.False(barrier.IsCompleted);
        await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await barrier.WaitAsync(guard.Token);
        Assert.True(b.DseStateObject.CommittedVersion >= 1);
    }

    [Fact]
    public async Task Deliver_WithHeader_RepliesAtOnceWithTheDestinationsHeader()
    {
        using var guard = new CancellationTokenSource(TestText.Timeout);
        var coordinator = new ClusterCoordinator();
        await using var b = await new TestStorage("b").OpenAsync(General(2, coordinator));
        await using var a = await new TestStorage("a").OpenAsync(General(1, coordinator));
        await using var server = await DarqServer.StartAsync(b);
        var client = new DarqService.DarqServiceClient(server.Channel);
        await a.DseStateObject!.StartLocalActionAsync(guard.Token);
        var fromA = a.DseStateObject.EndAction();

        var reply = await client.DeliverAsync(
            new DeliverRequest { Darq = "b", Source = "a", SourceLsn = 64, Payload = ByteString.CopyFromUtf8("x"), DseHeader = ByteString.CopyFrom(fromA.ToArray()) },
            cancellationToken: guard.Token);
        var resent = await client.DeliverAsync(
            new DeliverRequest { Darq = "b", Source = "a", SourceLsn = 64, Payload = ByteString.CopyFromUtf8("x"), DseHeader = ByteString.CopyFrom(fromA.ToArray()) },
            cancellationToken: guard.Token);

        Assert.False(reply.Duplicate);
        Assert.True(reply.Lsn >= 0);
        Assert.True(b.CommittedUntilAddress <= reply.Lsn, "the speculative reply waited for durability");
        var header = DseHeader.Parse(reply.DseHeader.Span);
        Assert.Equal(b.DseStateObject!.WorldLine, header.WorldLine);
        Assert.True(resent.Duplicate);
        Assert.False(resent.DseHeader.IsEmpty);
        Assert.Equal(1, b.UnconsumedCount);
    }

    [Fact]
    public async Task Deliver_WithoutHeaderIntoGeneralDarq_AcknowledgedOnlyOnceTheCoordinatorCommits()
    {
        using var guard = new CancellationTokenSource(TestText.Timeout);
        var coordinator = new ClusterCoordinator();
        await using var b = await new TestStorage("b").OpenAsync(General(2, coordinator));
        await using var server = await DarqServer.StartAsync(b);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "b", guard.Token);
        await using var inB = processor.ReadAllAsync(guard.Token).GetAsyncEnumerator(guard.Token);

        // A non-speculative source: its acknowledgement is a barrier, not just an append (nor just a log commit).
        var delivery = new GrpcDarqDestination(server.Channel).DeliverAsync(new DarqDelivery("plain", 1, "b", "x".Bytes()), guard.Token).AsTask();
        Assert.Equal("x", (await inB.TakeAsync(1))[0].Text());
        Assert.False(delivery.IsCompleted);

        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await delivery.WaitAsync(guard.Token);
        Assert.True(b.DseStateObject.CommittedVersion >= 1);

        // A resend is a duplicate, acknowledged by the committed version that ends exactly at it (no later one needed).
        long tail = b.TailAddress;
        await new GrpcDarqDestination(server.Channel).DeliverAsync(new DarqDelivery("plain", 1, "b", "x".Bytes()), guard.Token).AsTask().WaitAsync(guard.Token);
        Assert.Equal(tail, b.TailAddress);
        Assert.Equal(1, b.UnconsumedCount);
    }

    [Fact]
    public async Task Enqueue_WaitDurableIntoGeneralDarq_AcknowledgedOnlyOnceTheCoordinatorCommits()
    {
        using var guard = new CancellationTokenSource(TestText.Timeout);
        var coordinator = new ClusterCoordinator();
        await using var b = await new TestStorage("b").OpenAsync(General(2, coordinator));
        await using var server = await DarqServer.StartAsync(b);
        var processor = await b.RegisterProcessorAsync(guard.Token);
        var producer = new RemoteDarqProducer(server.Channel, "b", producerId: 7);

        // An external producer's durable acknowledgement is a barrier: a log commit alone could still be rolled back.
        var enqueue = producer.EnqueueAsync("x".Bytes(), waitDurable: true, cancellationToken: guard.Token);
        Assert.Equal("x", (await processor.Messages.ReadAsync(guard.Token)).Text());
        await b.CommitAsync(guard.Token);

        // Bounded wait for something that must not happen (docs/testing.md): a reply after the log commit would be wrong.
        Assert.NotSame(enqueue, await Task.WhenAny(enqueue, Task.Delay(TimeSpan.FromMilliseconds(500), guard.Token)));

        await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await enqueue.WaitAsync(guard.Token);
        Assert.True(b.DseStateObject.CommittedVersion >= 1);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Crash_SourceLosesSpeculativeTail_RemoteDestinationRollsBackAndChainEndsExactlyOnce()
    {
        using var guard = new CancellationTokenSource(TestText.Timeout);
        var coordinator = new ClusterCoordinator();
        await using var b = await new TestStorage("b").OpenAsync(General(2, coordinator));
        await using var serverB = await DarqServer.StartAsync(b);
        using var toB = new GrpcDarqDestinations().Add("b", new GrpcDarqDestination(serverB.Channel) { ReceivesSpeculatively = true });
        var aStorage = new TestStorage("a");
        using var processorB = await RemoteDarqProcessor.RegisterAsync(serverB.Channel, "b", guard.Token);
        await using var inB = processorB.ReadAllAsync(guard.Token).GetAsyncEnumerator(guard.Token);

        var (a, crash) = await OpenCrashableAsync(aStorage, General(1, coordinator, toB));
        await using (a)
        {
            await using var serverA = await DarqServer.StartAsync(a);

            // The input is persisted at A (version 1); the step that forwards it is not.
            await new RemoteDarqProducer(serverA.Channel, "a", producerId: 7).EnqueueAsync("m".Bytes(), waitDurable: false, cancellationToken: guard.Token);
            await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
            using var processorA = await RemoteDarqProcessor.RegisterAsync(serverA.Channel, "a", guard.Token);
            await using var inA = processorA.ReadAllAsync(guard.Token).GetAsyncEnumerator(guard.Token);
            var input = (await inA.TakeAsync(1))[0];
            await processorA.StepAsync(new DarqStep().Consume(input.Lsn).AddOut("b", input.Payload), cancellationToken: guard.Token);

            // B receives over gRPC speculatively, consumes it, and persists a version that depends on A's lost one.
            var seen = (await inB.TakeAsync(1))[0];
            await processorB.StepAsync(new DarqStep().Consume(seen.Lsn), cancellationToken: guard.Token);
            await b.DseStateObject!.AdvanceVersionAsync(guard.Token);
            Assert.Equal(0, b.UnconsumedCount);

            crash();
        }

        // A restarts on what survived: the coordinator rolls B back past the message it got from A's lost version, and B's
        // remote processor is superseded.
        await using var a2 = await aStorage.OpenAsync(General(1, coordinator, toB));
        await using var serverA2 = await DarqServer.StartAsync(a2);
        await b.DseStateObject.RefreshAsync(guard.Token);
        Assert.Equal(1, b.DseStateObject.WorldLine);
        await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => inB.MoveNextAsync().AsTask().WaitAsync(guard.Token));
        await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => processorB.StepAsync(new DarqStep().AddSelf("late".Bytes()), cancellationToken: guard.Token));

        // Both restart their processors: A replays the input and forwards it again; B ends it exactly once.
        using var processorB2 = await RemoteDarqProcessor.RegisterAsync(serverB.Channel, "b", guard.Token);
        await using var inB2 = processorB2.ReadAllAsync(guard.Token).GetAsyncEnumerator(guard.Token);
        Assert.True(processorB2.Incarnation > processorB.Incarnation);
        Assert.Equal(0, processorB2.ReplayCount);
        using var processorA2 = await RemoteDarqProcessor.RegisterAsync(serverA2.Channel, "a", guard.Token);
        await using var inA2 = processorA2.ReadAllAsync(guard.Token).GetAsyncEnumerator(guard.Token);
        var replayed = (await inA2.TakeAsync(1))[0];
        Assert.Equal("m", replayed.Text());
        var forwarded = await processorA2.StepAsync(new DarqStep().Consume(replayed.Lsn).AddOut("b", replayed.Payload), cancellationToken: guard.Token);

        var again = (await inB2.TakeAsync(1))[0];
        Assert.Equal("m", again.Text());
        var end = await processorB2.StepAsync(new DarqStep().Consume(again.Lsn), cancellationToken: guard.Token);
        await a2.WaitForDeliveredAsync(forwarded.OutLsns[0], guard.Token);
        await a2.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await b.DseStateObject.AdvanceVersionAsync(guard.Token);
        await b.WaitForRecoverableAsync(end.DurableAt - 1, guard.Token);

        Assert.Equal(0, b.UnconsumedCount);
        Assert.Equal(0, a2.PendingOutCount);
        using var last = await RemoteDarqProcessor.RegisterAsync(serverB.Channel, "b", guard.Token);
        Assert.Equal(0, last.ReplayCount);
    }

    [Fact]
    public async Task Deliver_HeaderFromLowerWorldLine_IsAbortedAndChangesNothing()
    {
        using var guard = new CancellationTokenSource(TestText.Timeout);
        var coordinator = new ClusterCoordinator();
        await using var b = await new TestStorage("b").OpenAsync(General(2, coordinator));
        await using var server = await DarqServer.StartAsync(b);
        var aStorage = new TestStorage("a");
        DseHeader stale;
        var (a, crash) = await OpenCrashableAsync(aStorage, General(1, coordinator));
        await using (a)
        {
            await a.EnqueueAsync("x".Bytes(), guard.Token);
            await a.DseStateObject!.StartLocalActionAsync(guard.Token);
            stale = a.DseStateObject.EndAction();
            crash();
        }

        // A's restart is a failure: the cluster moves to world-line 1, and A's old header is from the lost state.
        await using var a2 = await aStorage.OpenAsync(General(1, coordinator));
        await b.DseStateObject!.RefreshAsync(guard.Token);
        Assert.Equal(1, b.DseStateObject.WorldLine);
        long tail = b.TailAddress;
        var client = new DarqService.DarqServiceClient(server.Channel);

        var status = await Assert.ThrowsAsync<RpcException>(async () => await client.DeliverAsync(
            new DeliverRequest { Darq = "b", Source = "a", SourceLsn = 100, Payload = ByteString.CopyFromUtf8("x"), DseHeader = ByteString.CopyFrom(stale.ToArray()) },
            cancellationToken: guard.Token));
        var refused = await Assert.ThrowsAsync<DarqMessageRefusedException>(async () => await new GrpcDarqDestination(server.Channel)
            .DeliverSpeculativeAsync(new DarqDelivery("a", 100, "b", "x".Bytes()) { DseHeader = stale.ToArray() }, guard.Token));

        Assert.Equal(StatusCode.Aborted, status.StatusCode);
        Assert.Equal(DarqRpcErrors.MessageRefused, status.Trailers.GetValue(DarqRpcErrors.ErrorKey));
        Assert.Equal("0", status.Trailers.GetValue(DarqRpcErrors.WorldLineKey));
        Assert.Equal("1", status.Trailers.GetValue(DarqRpcErrors.CurrentWorldLineKey));
        Assert.Contains("world-line 0", status.Status.Detail, StringComparison.Ordinal);
        Assert.Equal((0, 1), (refused.MessageWorldLine, refused.WorldLine));
        Assert.Equal(new DarqMessageRefusedException("b", 0, 1).Message, refused.Message);
        Assert.Equal(tail, b.TailAddress);
        Assert.Equal(0, b.UnconsumedCount);
    }

    [Fact]
    public async Task Deliver_MalformedHeader_IsInvalidArgumentAndChangesNothing()
    {
        using var guard = new CancellationTokenSource(TestText.Timeout);
        var coordinator = new ClusterCoordinator();
        await using var b = await new TestStorage("b").OpenAsync(General(2, coordinator));
        await using var plain = await new TestStorage("p").OpenAsync();
        await using var server = await DarqServer.StartAsync(b, plain);
        var client = new DarqService.DarqServiceClient(server.Channel);
        long tail = b.TailAddress;
        long plainTail = plain.TailAddress;

        var general = await Assert.ThrowsAsync<RpcException>(async () => await client.DeliverAsync(
            new DeliverRequest { Darq = "b", Source = "a", SourceLsn = 1, Payload = ByteString.CopyFromUtf8("x"), DseHeader = ByteString.CopyFrom(1, 2, 3) },
            cancellationToken: guard.Token));
        var nonSpeculative = await Assert.ThrowsAsync<RpcException>(async () => await client.DeliverAsync(
            new DeliverRequest { Darq = "p", Source = "a", SourceLsn = 1, Payload = ByteString.CopyFromUtf8("x"), DseHeader = ByteString.CopyFrom(0xFF) },
            cancellationToken: guard.Token));

        Assert.All([general, nonSpeculative], e => Assert.Equal(StatusCode.InvalidArgument, e.StatusCode));
        Assert.Contains("dse_header is malformed", general.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("truncated", general.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(tail, b.TailAddress);
        Assert.Equal(0, b.UnconsumedCount);
        Assert.Equal(plainTail, plain.TailAddress);

        // Nothing was recorded for (a, 1): the same delivery without a header is no duplicate.
        var reply = await client.DeliverAsync(new DeliverRequest { Darq = "p", Source = "a", SourceLsn = 1, Payload = ByteString.CopyFromUtf8("x") },
            cancellationToken: guard.Token);
        Assert.False(reply.Duplicate);
        Assert.True(reply.DseHeader.IsEmpty);
    }

    [Fact]
    public async Task Deliver_HeaderToNonSpeculativeDarq_IsFailedPreconditionAndChangesNothing()
    {
        using var guard = new CancellationTokenSource(TestText.Timeout);
        var coordinator = new ClusterCoordinator();
        await using var a = await new TestStorage("a").OpenAsync(General(1, coordinator));
        await using var plain = await new TestStorage("p").OpenAsync();
        await using var server = await DarqServer.StartAsync(plain);
        await a.DseStateObject!.StartLocalActionAsync(guard.Token);
        var fromA = a.DseStateObject.EndAction();
        long tail = plain.TailAddress;

        // A destination configured as a cluster member that is not one: refused, so it never keeps a message from state
        // its source may still roll back.
        // It is a refusal for good (the source parks the destination rather than resending at once).
        var refused = await Assert.ThrowsAsync<DarqDeliveryRefusedException>(async () => await new GrpcDarqDestination(server.Channel) { ReceivesSpeculatively = true }
            .DeliverSpeculativeAsync(new DarqDelivery("a", 1, "p", "x".Bytes()) { DseHeader = fromA.ToArray() }, guard.Token));
        var error = Assert.IsType<RpcException>(refused.InnerException);

        Assert.Equal("p", refused.Destination);
        Assert.Equal(StatusCode.FailedPrecondition, error.StatusCode);
        Assert.Equal(DarqRpcErrors.NotSpeculative, error.Trailers.GetValue(DarqRpcErrors.ErrorKey));
        Assert.Contains("does not speculate generally", error.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(tail, plain.TailAddress);
        Assert.Equal(0, plain.UnconsumedCount);
    }

    [Fact]
    public async Task Deliver_GeneralSourceToDefaultGrpcDestination_SentOnlyOnceTheStepIsRecoverable()
    {
        using var guard = new CancellationTokenSource(TestText.Timeout);
        var coordinator = new ClusterCoordinator();
        await using var plain = await new TestStorage("p").OpenAsync();
        await using var server = await DarqServer.StartAsync(plain);
        var toP = new ObservedDestination("p", new GrpcDarqDestination(server.Channel));
        await using var a = await new TestStorage("a").OpenAsync(General(1, coordinator, toP));
        var processor = await a.RegisterProcessorAsync(guard.Token);

        // The destination is outside the cluster (ReceivesSpeculatively false by default): nothing leaves before the
        // step is inside a committed version.
        var step = await processor.StepAsync(new DarqStep().AddOut("p", "x".Bytes()), guard.Token);
        var delivered = a.WaitForDeliveredAsync(step.OutLsns[0], guard.Token).AsTask();
        Assert.Equal(0, plain.UnconsumedCount);
        Assert.Equal(0, toP.Attempts);
        Assert.False(delivered.IsCompleted);

        await a.DseStateObject!.AdvanceVersionAsync(guard.Token);
        await delivered.WaitAsync(guard.Token);
        Assert.True(a.DseStateObject.CommittedVersion >= 1);
        Assert.Equal(1, plain.UnconsumedCount);
    }

    /// <summary>Opens a DARQ on <paramref name="storage"/> behind fault-injecting devices; the returned action cuts both (a crash).</summary>
    private static async Task<(Darq Darq, Action Crash)> OpenCrashableAsync(TestStorage storage, Action<DarqOptions> configure)
    {
        var options = storage.Options();
        var log = new FaultInjectingDevice(options.LogDevice!);
        var commits = new FaultInjectingDevice(options.CommitDevice!);
        options.LogDevice = log;
        options.CommitDevice = commits;
        configure(options);
        var darq = await Darq.OpenAsync(options);
        return (darq, () =>
        {
            commits.CutNow();   // the commit device first: no commit record may point at log pages the cut lost
            log.CutNow();
        });
    }
}
