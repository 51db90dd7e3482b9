using Dse.Darq.Grpc.V1;
using Google.Protobuf;
using Grpc.Core;

namespace Dse.Darq.Grpc.Tests;

/// <summary>
/// A WaitForCommit that names an instance the DARQ is not is refused as stale (FAILED_PRECONDITION, stale-incarnation
/// trailers), with a message that says which instance was sent and which is current.
/// </summary>
public sealed class WaitForCommitInstanceTests
{
    [Fact]
    public async Task WaitForCommit_WrongInstanceFromAProcessor_MessageNamesBothInstancesAndIncarnations()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var client = new DarqService.DarqServiceClient(server.Channel);
        long instance = await InstanceAsync(client);
        using var processor = await RemoteDarqProcessor.RegisterAsync(server.Channel, "orders");
        long wrong = instance == long.MaxValue ? 1 : instance + 1;

        var request = new WaitForCommitRequest { Darq = "orders", Address = darq.TailAddress, Instance = wrong, Incarnation = processor.Incarnation };
        var error = await Assert.ThrowsAsync<RpcException>(() => client.WaitForCommitAsync(request).ResponseAsync.WaitAsync(TestText.Timeout));

        Assert.Equal(StatusCode.FailedPrecondition, error.StatusCode);
        Assert.Equal(DarqRpcErrors.StaleIncarnation, error.Trailers.GetValue(DarqRpcErrors.ErrorKey));
        Assert.Contains($"came from instance {wrong} of DARQ 'orders', which is instance {instance} now", error.Status.Detail, StringComparison.Ordinal);
        Assert.Contains($"processor incarnation {processor.Incarnation} must register again (the DARQ's current incarnation is {darq.Incarnation})", error.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public async Task WaitForCommit_WrongInstanceFromADelivery_MessageSaysToResend()
    {
        await using var darq = await new TestStorage("orders").OpenAsync();
        await using var server = await DarqServer.StartAsync(darq);
        var client = new DarqService.DarqServiceClient(server.Channel);
        long instance = await InstanceAsync(client);
        long wrong = instance == long.MaxValue ? 1 : instance + 1;

        var request = new WaitForCommitRequest { Darq = "orders", Address = darq.TailAddress, Instance = wrong };
        var error = await Assert.ThrowsAsync<RpcException>(() => client.WaitForCommitAsync(request).ResponseAsync.WaitAsync(TestText.Timeout));

        Assert.Equal(StatusCode.FailedPrecondition, error.StatusCode);
        Assert.Contains($"came from instance {wrong} of DARQ 'orders', which is instance {instance} now", error.Status.Detail, StringComparison.Ordinal);
        Assert.EndsWith("resend from the first message not acknowledged.", error.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public void ToDarqException_StaleIncarnation_KeepsWhatTheServerSaid()
    {
        const string Detail = "WaitForCommit came from instance 8 of DARQ 'orders', which is instance 7 now; resend from the first message not acknowledged.";
        var trailers = new Metadata
        {
            { DarqRpcErrors.ErrorKey, DarqRpcErrors.StaleIncarnation },
            { DarqRpcErrors.DarqKey, "orders" },
            { DarqRpcErrors.IncarnationKey, "1" },
            { DarqRpcErrors.CurrentIncarnationKey, "1" },
        };

        var error = DarqRpcErrors.ToDarqException(new RpcException(new Status(StatusCode.FailedPrecondition, Detail), trailers));

        var stale = Assert.IsType<DarqStaleIncarnationException>(error);
        Assert.Equal(Detail, stale.Message);
        Assert.Equal(1, stale.Incarnation);
    }

    /// <summary>The DARQ's instance, as an append-only DeliverBatch reports it.</summary>
    private static async Task<long> InstanceAsync(DarqService.DarqServiceClient client)
    {
        var request = new DeliverBatchRequest { Darq = "orders", Source = "upstream", AppendOnly = true };
        request.Messages.Add(new DeliveredMessage { SourceLsn = 64, Payload = ByteString.CopyFromUtf8("x") });
        return (await client.DeliverBatchAsync(request).ResponseAsync.WaitAsync(TestText.Timeout)).Instance;
    }
}
