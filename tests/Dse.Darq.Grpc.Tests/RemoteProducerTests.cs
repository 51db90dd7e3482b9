using Dse.Darq.Grpc.V1;
using Dse.Testing;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;

namespace Dse.Darq.Grpc.Tests;

public sealed class RemoteProducerTests
{
    [Fact]
    public async Task EnqueueAsync_ResentSequenceNumber_IsDuplicateAndAppendsNothing()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 7);

        var first = await producer.EnqueueAsync("a".Bytes());
        var second = await producer.EnqueueAsync("b".Bytes());
        Assert.False(first.IsDuplicate);
        Assert.False(second.IsDuplicate);
        Assert.True(second.Lsn > first.Lsn);
        Assert.True(darq.CommittedUntilAddress >= second.DurableAt, "wait_durable replies only once the message is committed");
        long tail = darq.TailAddress;

        // A resend (the reply was lost) under the same sequence number, and a restarted client that forgot where it was.
        var resent = await producer.EnqueueAsync(sequenceNumber: 0, "a".Bytes());
        var restarted = await new RemoteDarqProducer(server.Channel, "orders", producerId: 7).EnqueueAsync("c".Bytes());

        Assert.True(resent.IsDuplicate);
        Assert.Equal(-1, resent.Lsn);
        Assert.True(restarted.IsDuplicate);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(2, darq.UnconsumedCount);
        Assert.Equal(2, producer.NextSequenceNumber);
    }

    [Fact]
    public async Task EnqueueAsync_WithoutWaitingForDurability_RepliesWithTheAddressToAwait()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);

        var sent = await producer.EnqueueAsync("a".Bytes(), waitDurable: false);

        Assert.True(darq.CommittedUntilAddress < sent.DurableAt, "nothing committed it: the DARQ has no group commit in these tests");
        var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        using (processor)
        {
            await processor.WaitForCommitAsync(sent.DurableAt);
        }

        Assert.True(darq.CommittedUntilAddress >= sent.DurableAt);
    }

    [Fact]
    public async Task EnqueueAsync_UnknownDarq_IsNotFoundNamingIt()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "nope", producerId: 1);

        var error = await Assert.ThrowsAsync<RpcException>(() => producer.EnqueueAsync("a".Bytes()));

        Assert.Equal(StatusCode.NotFound, error.StatusCode);
        Assert.Contains("'nope'", error.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(0, darq.UnconsumedCount);
    }

    [Fact]
    public async Task EnqueueAsync_OversizedPayload_IsInvalidArgumentAndChangesNothing()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1);
        long tail = darq.TailAddress;

        var error = await Assert.ThrowsAsync<RpcException>(() => producer.EnqueueAsync(new byte[TestStorage.MaxMessageSize + 1]));

        Assert.Equal(StatusCode.InvalidArgument, error.StatusCode);
        Assert.Contains("MaxMessageSize", error.Status.Detail, StringComparison.Ordinal);
        Assert.Equal(tail, darq.TailAddress);
        Assert.Equal(0, darq.UnconsumedCount);

        // The producer is not poisoned: the next message goes through.
        Assert.False((await producer.EnqueueAsync("ok".Bytes())).IsDuplicate);
    }

    [Fact]
    public async Task EnqueueAsync_ClosedDarq_IsUnavailable()
    {
        var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        await darq.DisposeAsync();
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 1) { MaxAttempts = 1 };

        var error = await Assert.ThrowsAsync<RpcException>(() => producer.EnqueueAsync("a".Bytes()));

        Assert.Equal(StatusCode.Unavailable, error.StatusCode);
        Assert.Contains("closed", error.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public async Task EnqueueAsync_ReplyLost_ResendsTheSameSequenceNumberAndAppendsOnce()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var lose = new LoseFirstReplyInterceptor();
        var producer = new RemoteDarqProducer(server.Channel.Intercept(lose), "orders", producerId: 3) { RetryDelay = TimeSpan.FromMilliseconds(1) };

        var sent = await producer.EnqueueAsync("a".Bytes());
        var next = await producer.EnqueueAsync("b".Bytes());

        // The first attempt was appended, its reply lost; the resend is acknowledged as its duplicate.
        Assert.Equal(3, lose.Calls);
        Assert.True(sent.IsDuplicate);
        Assert.False(next.IsDuplicate);
        Assert.Equal(2, darq.UnconsumedCount);
        var processor = await darq.RegisterProcessorAsync();
        var texts = new List<string>();
        while (processor.Messages.TryRead(out var message))
        {
            texts.Add(message.Text());
        }

        Assert.Equal(["a", "b"], texts);
    }

    [Fact]
    public async Task EnqueueAsync_ServerDown_FailsAfterMaxAttemptsAndUsesUpTheSequenceNumber()
    {
        // Port 1 is privileged: nothing of a test run listens there, so connections are refused.
        using var channel = GrpcChannel.ForAddress("http://127.0.0.1:1");
        var producer = new RemoteDarqProducer(channel, "orders", producerId: 1) { MaxAttempts = 2, RetryDelay = TimeSpan.FromMilliseconds(1) };

        var error = await Assert.ThrowsAsync<RpcException>(() => producer.EnqueueAsync("a".Bytes()));

        Assert.Equal(StatusCode.Unavailable, error.StatusCode);
        Assert.Equal(1, producer.NextSequenceNumber);
    }

    [Fact]
    public async Task EnqueueAsync_SequenceGap_ThrowsTheExpectedNumberAndTheClientContinuesFromIt()
    {
        await using var darq = await new TestStorage("orders").OpenAsync(o => o.ContiguousProducerSequences = true);
        await using var server = await DarqServer.StartAsync(darq);
        var producer = new RemoteDarqProducer(server.Channel, "orders", producerId: 7);
        await producer.EnqueueAsync("a".Bytes());
        await producer.EnqueueAsync("b".Bytes());
        long tail = darq.TailAddress;

        // Sequence numbers 2 to 4 never arrived (a client that restarted too far ahead, or enqueues a rollback voided).
        var gap = await Assert.ThrowsAsync<DarqSequenceGapException>(() => producer.EnqueueAsync(sequenceNumber: 5, "f".Bytes()));

        Assert.Equal("orders", gap.DarqName);
        Assert.Equal(7, gap.ProducerId);
        Assert.Equal(5, gap.SequenceNumber);
        Assert.Equal(2, gap.ExpectedSequenceNumber);
        Assert.Equal(2, producer.NextSequenceNumber);
        Assert.Equal(tail, darq.TailAddress);

        // The status itself, as any client sees it: FAILED_PRECONDITION with the details in trailers.
        var client = new DarqService.DarqServiceClient(server.Channel);
        var raw = await Assert.ThrowsAsync<RpcException>(async () => await client.EnqueueAsync(
            new EnqueueRequest { Darq = "orders", ProducerId = 7, SequenceNumber = 9, Payload = ByteString.CopyFromUtf8("x") }));
        Assert.Equal(StatusCode.FailedPrecondition, raw.StatusCode);
        Assert.Equal(DarqRpcErrors.SequenceGap, raw.Trailers.GetValue(DarqRpcErrors.ErrorKey));
        Assert.Equal("2", raw.Trailers.GetValue(DarqRpcErrors.ExpectedSequenceKey));
        Assert.Equal("9", raw.Trailers.GetValue(DarqRpcErrors.SequenceKey));
        Assert.Equal("7", raw.Trailers.GetValue(DarqRpcErrors.ProducerIdKey));

        // Client-numbered enqueues fill the gap from the expected number on.
        foreach (string text in new[] { "c", "d", "e", "f" })
        {
            Assert.False((await producer.EnqueueAsync(text.Bytes())).IsDuplicate);
        }

        Assert.Equal(6, producer.NextSequenceNumber);
        var processor = await darq.RegisterProcessorAsync();
        var texts = new List<string>();
        while (processor.Messages.TryRead(out var message))
        {
            texts.Add(message.Text());
        }

        Assert.Equal(["a", "b", "c", "d", "e", "f"], texts);
    }
}
