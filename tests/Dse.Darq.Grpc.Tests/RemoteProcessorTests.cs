using Dse.Storage;
using Grpc.Core;

namespace Dse.Darq.Grpc.Tests;

public sealed class RemoteProcessorTests
{
    [Fact]
    public async Task ReadAllAsync_AfterRegistration_ReplaysThenStreamsLiveMessages()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        var a = await producer.EnqueueAsync("a".Bytes());
        var b = await producer.EnqueueAsync("b".Bytes());

        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var messages = processor.ReadAllAsync().GetAsyncEnumerator();
        var replay = await messages.TakeAsync(2);
        var c = await producer.EnqueueAsync("c".Bytes());
        var live = await messages.TakeAsync(1);

        Assert.Equal(1, processor.Incarnation);
        Assert.Equal(2, processor.ReplayCount);
        Assert.Equal([(a.Lsn, "a", true), (b.Lsn, "b", true)], replay.Select(m => (m.Lsn, m.Text(), m.IsReplay)));
        Assert.All(replay, m => Assert.Equal(DarqMessageKind.In, m.Kind));
        Assert.Equal((c.Lsn, "c", false), (live[0].Lsn, live[0].Text(), live[0].IsReplay));
    }

    [Fact]
    public async Task ReadAllAsync_BacklogBeyondTheServersBudget_StreamsEveryMessageInOrderFromItsLog()
    {
        await using var darq = await new TestStorage("orders").OpenAsync(o => o.MaxBufferedInBytes = 4096);
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        var sent = new List<(long Lsn, string Text)>();
        for (int i = 0; i < 60; i++)
        {
            string text = i.ToString("D3", System.Globalization.CultureInfo.InvariantCulture) + new string('x', 1000);
            sent.Add(((await producer.EnqueueAsync(text.Bytes())).Lsn, text));
        }

        await darq.CommitAsync();
        Assert.True(darq.SpilledInCount > 50, $"{darq.SpilledInCount} messages spilled");

        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var messages = processor.ReadAllAsync().GetAsyncEnumerator();
        var received = new List<(long Lsn, string Text)>();
        for (int i = 0; i < sent.Count; i++)
        {
            var message = Assert.Single(await messages.TakeAsync(1));
            received.Add((message.Lsn, message.Text()));
            await processor.StepAsync(new DarqStep().Consume(message));
        }

        Assert.Equal(sent, received);
        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task StepAsync_ThenReregister_ReplaysSelfFirstThenUnconsumedIn()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        await producer.EnqueueAsync("a".Bytes());
        await producer.EnqueueAsync("b".Bytes());

        long selfLsn;
        using (var first = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders"))
        {
            await using var messages = first.ReadAllAsync().GetAsyncEnumerator();
            var replay = await messages.TakeAsync(2);
            var done = await first.StepAsync(new DarqStep().Consume(replay[0]).AddSelf("state-1".Bytes()), waitDurable: true);
            selfLsn = Assert.Single(done.SelfLsns);
            Assert.True(darq.CommittedUntilAddress >= done.DurableAt);
        }

        using var second = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var again = second.ReadAllAsync().GetAsyncEnumerator();
        var replayed = await again.TakeAsync(2);

        Assert.Equal(2, second.Incarnation);
        Assert.Equal([(selfLsn, DarqMessageKind.Self, "state-1"), (replayed[1].Lsn, DarqMessageKind.In, "b")],
            replayed.Select(m => (m.Lsn, m.Kind, m.Text())));
    }

    [Fact]
    public async Task StepAsync_ConsumedTwice_IsRejectedWithTheReasonAndChangesNothing()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        var a = await producer.EnqueueAsync("a".Bytes());
        var b = await producer.EnqueueAsync("b".Bytes());
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await processor.StepAsync(new DarqStep().Consume(a.Lsn));
        long tail = darq.TailAddress;

        var again = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepAsync(new DarqStep().Consume(b.Lsn).Consume(a.Lsn).AddSelf("x".Bytes())));
        var twice = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepAsync(new DarqStep().Consume(b.Lsn).Consume(b.Lsn)));
        var unknown = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.StepAsync(new DarqStep().Consume(a.Lsn + 1)));

        Assert.Equal((a.Lsn, DarqStepRejection.AlreadyConsumed), (again.Lsn, again.Reason));
        Assert.Equal((b.Lsn, DarqStepRejection.ConsumedTwiceInStep), (twice.Lsn, twice.Reason));
        Assert.Equal(DarqStepRejection.UnknownMessage, unknown.Reason);
        Assert.Equal(new DarqStepRejectedException("orders", a.Lsn, DarqStepRejection.AlreadyConsumed).Message, again.Message);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task ConsumeAsync_ConsumesOneMessage_RefusesItTwiceAndIsDurableWhenAsked()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        var a = await producer.EnqueueAsync("a".Bytes());
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        long before = darq.TailAddress;

        var consumed = await processor.ConsumeAsync(a.Lsn, waitDurable: true);

        Assert.Equal(before, consumed.CompletionLsn);
        Assert.Equal(darq.TailAddress, consumed.DurableAt);
        Assert.True(darq.CommittedUntilAddress >= consumed.DurableAt);
        Assert.Equal(0, darq.UnconsumedCount);
        var again = await Assert.ThrowsAsync<DarqStepRejectedException>(() => processor.ConsumeAsync(a.Lsn));
        Assert.Equal((a.Lsn, DarqStepRejection.AlreadyConsumed), (again.Lsn, again.Reason));
        Assert.Equal(consumed.DurableAt, darq.TailAddress);
    }

    [Fact]
    public async Task StepAsync_AfterASecondRegistration_IsStaleAndTheOldStreamEnds()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var a = await new RemoteDarqProducer(server.Channel, "orders", producerId: 1).EnqueueAsync("a".Bytes());
        using var first = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var firstMessages = first.ReadAllAsync().GetAsyncEnumerator();
        await firstMessages.TakeAsync(1);

        using var second = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        long tail = darq.TailAddress;

        var ended = await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => firstMessages.MoveNextAsync().AsTask().WaitAsync(TestText.Timeout));
        var refused = await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => first.StepAsync(new DarqStep().Consume(a.Lsn)));

        Assert.Equal((1, 2), (ended.Incarnation, ended.CurrentIncarnation));
        Assert.Equal((1, 2), (refused.Incarnation, refused.CurrentIncarnation));
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);

        // The new processor steps the message the old one could not.
        await second.StepAsync(new DarqStep().Consume(a.Lsn));
        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task StepAsync_MalformedSteps_AreInvalidArgumentAndChangeNothing()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var a = await new RemoteDarqProducer(server.Channel, "orders", producerId: 1).EnqueueAsync("a".Bytes());
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        long tail = darq.TailAddress;

        var empty = await Assert.ThrowsAsync<RpcException>(() => processor.StepAsync(new DarqStep()));
        var oversized = await Assert.ThrowsAsync<RpcException>(() =>
            processor.StepAsync(new DarqStep().Consume(a.Lsn).AddSelf(new byte[TestStorage.MaxMessageSize + 1])));
        var longName = await Assert.ThrowsAsync<RpcException>(() =>
            processor.StepAsync(new DarqStep().Consume(a.Lsn).AddOut(new string('d', 300), "x".Bytes())));

        Assert.All([empty, oversized, longName], e => Assert.Equal(StatusCode.InvalidArgument, e.StatusCode));
        Assert.Contains("at least one message", empty.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("MaxMessageSize", oversized.Status.Detail, StringComparison.Ordinal);
        Assert.Contains("destination name", longName.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    public async Task RegisterAsync_UnknownDarq_IsNotFound()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);

        var error = await Assert.ThrowsAsync<RpcException>(() => RemoteDarqProcessor.RegisterAsync(server.Channel, "nope"));

        Assert.Equal(StatusCode.NotFound, error.StatusCode);
        Assert.Contains("'nope'", error.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(0, darq.Incarnation);
    }

    [Fact]
    public async Task ReadAllAsync_DarqCloses_EndsWithUnavailable()
    {
        var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var messages = processor.ReadAllAsync().GetAsyncEnumerator();

        await darq.DisposeAsync();
        var error = await Assert.ThrowsAsync<RpcException>(() => messages.MoveNextAsync().AsTask().WaitAsync(TestText.Timeout));

        Assert.Equal(StatusCode.Unavailable, error.StatusCode);
        Assert.Contains("closed", error.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Dispose_ClientCancelsTheStream_ServerStopsReadingAndTheRegistrationStands()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        await producer.EnqueueAsync("a".Bytes());
        var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using (var messages = processor.ReadAllAsync().GetAsyncEnumerator())
        {
            await messages.TakeAsync(1);
        }

        processor.Dispose();
        await server.Logs.WaitForAsync(4101, "the client cancelled").WaitAsync(TestText.Timeout);

        // Nothing was consumed and nobody newer registered: the DARQ still has incarnation 1 and the message.
        Assert.Equal(1, darq.Incarnation);
        Assert.Equal(1, darq.UnconsumedCount);
        await producer.EnqueueAsync("b".Bytes());
        using var next = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var again = next.ReadAllAsync().GetAsyncEnumerator();
        Assert.Equal(["a", "b"], (await again.TakeAsync(2)).Select(m => m.Text()));
    }

    [Fact]
    public async Task ReadAllAsync_ServerStops_EndsWithUnavailableWithoutHoldingTheShutdown()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var messages = processor.ReadAllAsync().GetAsyncEnumerator();
        var next = messages.MoveNextAsync().AsTask();

        await server.StopAsync().WaitAsync(TestText.Timeout);
        var error = await Assert.ThrowsAsync<RpcException>(() => next.WaitAsync(TestText.Timeout));

        Assert.Equal(StatusCode.Unavailable, error.StatusCode);
        await server.Logs.WaitForAsync(4101, "the server is stopping").WaitAsync(TestText.Timeout);
    }

    [Fact]
    public async Task StepAsync_WithActivity_IsRecordedAsAnActivityAndReplayedAsOne()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var a = await new RemoteDarqProducer(server.Channel, "orders", producerId: 1).EnqueueAsync("a".Bytes());
        long activityLsn;
        using (var first = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders"))
        {
            var done = await first.StepAsync(new DarqStep().Consume(a.Lsn).AddSelf("state".Bytes()).AddActivity("charge", "42".Bytes()));
            activityLsn = done.SelfLsns[1];
        }

        using var second = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        await using var replay = second.ReadAllAsync().GetAsyncEnumerator();
        var messages = await replay.TakeAsync(2);

        Assert.Equal([DarqMessageKind.Self, DarqMessageKind.Activity], messages.Select(m => m.Kind));
        var activity = DarqActivity.FromMessage(messages[1], "orders");
        Assert.Equal((activityLsn, "charge", "42"), (activity.Lsn, activity.Name, System.Text.Encoding.UTF8.GetString(activity.Input.Span)));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task StepAsync_WaitDurableButCommitsFail_IsNotReportedAsRetryableAndNamesTheAppendedStep()
    {
        var storage = new TestStorage("orders");
        var commits = new FaultInjectingDevice(DseDevices.CreateInMemory(storage.Commits));
        await using var darq = await storage.OpenAsync(options => options.CommitDevice = commits);
        await using var server = await DarqServer.StartAsync(darq);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        commits.FailPermanently();

        var error = await Assert.ThrowsAsync<RpcException>(
            () => processor.StepAsync(new DarqStep().AddSelf("state-1".Bytes()), waitDurable: true).WaitAsync(TestText.Timeout));

        // The step was appended before the commit failed: UNAVAILABLE ("retry") would make a resend append it twice.
        Assert.Equal(1, darq.UnconsumedCount);
        Assert.Equal(StatusCode.Aborted, error.StatusCode);
        Assert.Equal(DarqRpcErrors.NotDurable, error.Trailers.GetValue(DarqRpcErrors.ErrorKey));
        Assert.True(long.Parse(error.Trailers.GetValue(DarqRpcErrors.DurableAtKey)!, System.Globalization.CultureInfo.InvariantCulture) > 0);
        Assert.Contains("do not resend", error.Status.Detail, StringComparison.Ordinal);

        // Once the device recovers, the step's address becomes durable without a resend.
        commits.ClearFaults();
        long durableAt = long.Parse(error.Trailers.GetValue(DarqRpcErrors.DurableAtKey)!, System.Globalization.CultureInfo.InvariantCulture);
        for (int attempt = 1; ; attempt++)
        {
            try
            {
                await processor.WaitForCommitAsync(durableAt).WaitAsync(TestText.Timeout);
                break;
            }
            catch (RpcException retry) when (retry.StatusCode == StatusCode.Unavailable && attempt < 3)
            {
                // A commit attempt decided before ClearFaults may still report its failure.
            }
        }

        Assert.True(darq.CommittedUntilAddress >= durableAt);
        Assert.Equal(1, darq.UnconsumedCount);
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task Enqueue_WithoutProducerWaitDurableButCommitsFail_IsNotReportedAsRetryable()
    {
        var storage = new TestStorage("orders");
        var commits = new FaultInjectingDevice(DseDevices.CreateInMemory(storage.Commits));
        await using var darq = await storage.OpenAsync(options => options.CommitDevice = commits);
        await using var server = await DarqServer.StartAsync(darq);
        var client = new V1.DarqService.DarqServiceClient(server.Channel);
        commits.FailPermanently();

        var error = await Assert.ThrowsAsync<RpcException>(() => client.EnqueueAsync(
            new V1.EnqueueRequest { Darq = "orders", Payload = Google.Protobuf.ByteString.CopyFromUtf8("a"), WaitDurable = true }).ResponseAsync.WaitAsync(TestText.Timeout));

        Assert.Equal(1, darq.UnconsumedCount);
        Assert.Equal(StatusCode.Aborted, error.StatusCode);
        Assert.Equal(DarqRpcErrors.NotDurable, error.Trailers.GetValue(DarqRpcErrors.ErrorKey));
        commits.ClearFaults();
    }

    [Fact]
    public async Task RegisterAsync_Cancelled_ThrowsOperationCanceledLikeTheOtherCalls()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);

        await Assert.ThrowsAnyAsync<OperationCanceledException>(
            () => RemoteDarqProcessor.RegisterAsync(server.Channel, "orders", new CancellationToken(canceled: true)).WaitAsync(TestText.Timeout));
    }

    [Fact]
    [Trait("Category", "Recovery")]
    public async Task WaitForCommitAsync_DarqRestartedAndLostTheStep_IsRefusedAsStaleNotAcknowledged()
    {
        var storage = new TestStorage("orders");
        var logFaults = new FaultInjectingDevice(DseDevices.CreateInMemory(storage.Log));
        var commitFaults = new FaultInjectingDevice(DseDevices.CreateInMemory(storage.Commits));
        var darq = await storage.OpenAsync(options => (options.LogDevice, options.CommitDevice) = (logFaults, commitFaults));
        await using var server = await DarqServer.StartAsync(darq);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        var step = await processor.StepAsync(new DarqStep().AddSelf("state-1".Bytes()));

        // The DARQ crashes before the step is committed, and comes back (same name, same server) without it.
        commitFaults.CutNow();   // the commit device first: no commit record may point at log pages the cut lost
        logFaults.CutNow();
        await darq.DisposeAsync();
        await using var reopened = await storage.OpenAsync();
        server.Registry.Add(reopened);
        while (reopened.TailAddress <= step.DurableAt)
        {
            await reopened.EnqueueAsync(new byte[1000]);
        }

        // Acknowledging the address would tell the processor its lost step is durable.
        var error = await Assert.ThrowsAsync<DarqStaleIncarnationException>(() => processor.WaitForCommitAsync(step.DurableAt).WaitAsync(TestText.Timeout));

        Assert.Equal(processor.Incarnation, error.Incarnation);
        var local = await reopened.RegisterProcessorAsync();
        var replayed = new List<DarqMessage>();
        while (local.Messages.TryRead(out var message))
        {
            replayed.Add(message);
        }

        Assert.DoesNotContain(replayed, m => m.Kind == DarqMessageKind.Self);
    }
}
