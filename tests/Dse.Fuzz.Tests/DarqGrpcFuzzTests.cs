using Dse.Darq;
using Dse.Darq.Grpc;
using Dse.Darq.Grpc.V1;
using Dse.Storage;
using Dse.Testing;
using Google.Protobuf;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Xunit.Abstractions;

namespace Dse.Fuzz.Tests;

/// <summary>
/// Every request of the DARQ service (protos/dse/darq/v1/darq.proto), operator calls enabled, as raw, random and mutated
/// bytes against one DARQ on a loopback server: each call answers within its deadline with a documented status (never
/// UNKNOWN or INTERNAL), a refused call appends nothing and changes no count, and the DARQ still takes an enqueue.
/// </summary>
[Trait("Category", "Fuzz")]
public sealed class DarqGrpcFuzzTests(ITestOutputHelper output)
{
    private const string Service = "dse.darq.v1.DarqService";
    private const string Name = "fuzz";

    private static readonly string[] Methods =
    [
        "Enqueue", "Register", "Step", "Deliver", "DeliverBatch", "Checkpoint", "WaitForCommit", "ListParkedDeliveries",
        "RetryParkedDelivery", "DiscardOut", "RetireProducer",
    ];

    [Fact]
    public async Task EveryMethod_MutatedRequests_DocumentedStatusAndNoChangeWhenRefused()
    {
        await using var darq = await Darq.Darq.OpenAsync(DarqStorageFuzzTests.Options(Name, new InMemoryStorage(), new InMemoryStorage()));
        var registry = new DarqRegistry();
        registry.Add(darq);
        await using var server = await LoopbackGrpcServer.StartAsync(
            app => app.MapDarqService(),
            services =>
            {
                services.AddSingleton<IDarqResolver>(registry);
                services.Configure<DarqGrpcServiceOptions>(o => o.EnableOperatorCalls = true);
            });
        var invoker = server.Channel.CreateCallInvoker();
        var findings = new GrpcFindings();
        var known = new Known();
        var run = FuzzRun.Start($"{nameof(DarqGrpcFuzzTests)}.{nameof(EveryMethod_MutatedRequests_DocumentedStatusAndNoChangeWhenRefused)}", output, defaultInputs: 1000);

        // A processor, so that steps and checkpoints have an incarnation to name.
        var registered = await RawGrpc.StreamAsync(invoker, Service, "Register", new RegisterRequest { Darq = Name }.ToByteArray(), maxMessages: 1);
        Assert.True(registered.Outcome.IsOk, $"register: {registered.Outcome}");

        await run.RunAsync(async (seed, random) =>
        {
            var before = await StateAsync(darq);
            string method = Methods[random.Next(Methods.Length)];
            var valid = Enumerable.Range(0, 3).Select(_ => ValidRequest(method, random, darq, known)).ToList();
            var (request, how) = ProtoInputs.Next(random, valid);

            CallOutcome outcome;
            if (method == "Register")
            {
                (outcome, var events) = await RawGrpc.StreamAsync(invoker, Service, method, request, maxMessages: 1);
            }
            else
            {
                outcome = await RawGrpc.UnaryAsync(invoker, Service, method, request);
            }

            run.Tally(outcome.Status.ToString());
            string context = $"{method} {CodecCheck.Hex(request)} ({how}) answered {outcome}";
            if (outcome.IsOk)
            {
                known.Learn(method, outcome.Response);
            }
            else if (!findings.Check(method, outcome, request, how, seed) && outcome.Status != StatusCode.Aborted)
            {
                // Refused (ABORTED is not a refusal: appended, not durable): nothing appended, nothing counted.
                var after = await StateAsync(darq);
                Assert.True(before == after, $"a refused call changed the DARQ: {context}\nbefore {before}\nafter  {after}");
            }

            // Still serving.
            var probe = await RawGrpc.UnaryAsync(invoker, Service, "Enqueue", new EnqueueRequest { Darq = Name, Payload = ByteString.CopyFromUtf8("probe") }.ToByteArray());
            Assert.True(probe.IsOk, $"an enqueue after {context}: {probe}");
            known.Learn("Enqueue", probe.Response);
        }, stateful: true);

        findings.AssertNone(run, server.Logs);
    }

    private static async Task<string> StateAsync(Darq.Darq darq) =>
        $"tail {darq.TailAddress}, unconsumed {darq.UnconsumedCount}, pending OUT {darq.PendingOutCount}, incarnation {darq.Incarnation}, " +
        $"producers {await darq.ProducerCountAsync()}, parked {darq.ParkedDeliveries.Count}";

    /// <summary>A well-formed request of <paramref name="method"/> about the DARQ's current incarnation and the LSNs it handed out.</summary>
    private static IMessage ValidRequest(string method, Random random, Darq.Darq darq, Known known)
    {
        ByteString Payload() => ByteString.CopyFrom(Enumerable.Range(0, random.Next(0, 24)).Select(_ => (byte)random.Next(256)).ToArray());
        long Lsn(List<long> lsns) => lsns.Count > 0 && random.Next(4) > 0 ? lsns[random.Next(lsns.Count)] : random.Next(0, (int)Math.Min(int.MaxValue, darq.TailAddress + 64));
        long producer = random.Next(1, 4);

        IMessage message = method switch
        {
            "Enqueue" => random.Next(2) == 0
                ? new EnqueueRequest { Darq = Name, Payload = Payload(), WaitDurable = random.Next(2) == 0 }
                : new EnqueueRequest
                {
                    Darq = Name,
                    ProducerId = producer,
                    SequenceNumber = Math.Max(0, known.Sequences.GetValueOrDefault(producer) + random.Next(-1, 3)),
                    Payload = Payload(),
                    WaitDurable = random.Next(2) == 0,
                },
            "Register" => new RegisterRequest { Darq = Name },
            "Step" => new StepRequest
            {
                Darq = Name,
                Incarnation = darq.Incarnation,
                Consumed = { Enumerable.Range(0, random.Next(0, 3)).Select(_ => Lsn(known.Messages)).Distinct() },
                SelfMessages = { Enumerable.Range(0, random.Next(0, 3)).Select(_ => new SelfMessage { Payload = Payload(), Activity = random.Next(5) == 0 ? "act" : "" }) },
                OutMessages = { Enumerable.Range(0, random.Next(0, 2)).Select(_ => new OutMessage { Destination = "elsewhere", Payload = Payload() }) },
                WaitDurable = random.Next(2) == 0,
            },
            "Deliver" => new DeliverRequest
            {
                Darq = Name,
                Source = "source",
                SourceLsn = known.NextSourceLsn(random),
                Payload = Payload(),
                DseHeader = random.Next(6) == 0 ? ByteString.CopyFrom(DseHeader.FromOrigin(7, 0, 1).ToArray()) : ByteString.Empty,
            },
            "DeliverBatch" => new DeliverBatchRequest
            {
                Darq = Name,
                Source = "source",
                Messages = { Enumerable.Range(0, random.Next(1, 4)).Select(_ => new DeliveredMessage { SourceLsn = known.NextSourceLsn(random), Payload = Payload() }) },
                AppendOnly = random.Next(2) == 0,
            },
            "Checkpoint" => new CheckpointRequest
            {
                Darq = Name,
                Incarnation = darq.Incarnation,
                Replace = { Enumerable.Range(0, random.Next(1, 3)).Select(_ => Lsn(known.Self)).Distinct() },
                Snapshot = { Enumerable.Range(0, random.Next(0, 3)).Select(_ => Payload()) },
                WaitDurable = random.Next(2) == 0,
            },
            "WaitForCommit" => new WaitForCommitRequest { Darq = Name, Address = random.Next(0, (int)Math.Min(int.MaxValue, darq.TailAddress + 1)), Incarnation = darq.Incarnation },
            "ListParkedDeliveries" => new ListParkedDeliveriesRequest { Darq = Name },
            "RetryParkedDelivery" => new RetryParkedDeliveryRequest { Darq = Name, Destination = "elsewhere" },
            "DiscardOut" => new DiscardOutRequest { Darq = Name, Lsn = Lsn(known.Out) },
            _ => new RetireProducerRequest { Darq = Name, ProducerId = producer },
        };
        return message;
    }

    /// <summary>LSNs and sequence numbers from the DARQ's answers, for requests that name something that exists.</summary>
    private sealed class Known
    {
        private long _sourceLsn;

        public List<long> Messages { get; } = [];

        public List<long> Self { get; } = [];

        public List<long> Out { get; } = [];

        public Dictionary<long, long> Sequences { get; } = [];

        public long NextSourceLsn(Random random) => _sourceLsn += random.Next(0, 3) == 0 ? 0 : random.Next(1, 100);

        public void Learn(string method, byte[]? response)
        {
            if (response is null)
            {
                return;
            }

            switch (method)
            {
                case "Enqueue":
                    var enqueued = EnqueueReply.Parser.ParseFrom(response);
                    if (enqueued.Lsn >= 0)
                    {
                        Messages.Add(enqueued.Lsn);
                    }

                    break;
                case "Step":
                    var step = StepReply.Parser.ParseFrom(response);
                    Messages.AddRange(step.SelfLsns);
                    Self.AddRange(step.SelfLsns);
                    Out.AddRange(step.OutLsns);
                    break;
                case "Checkpoint":
                    Self.AddRange(CheckpointReply.Parser.ParseFrom(response).SelfLsns);
                    break;
            }
        }
    }
}
