using Dse.Coordinator;
using Dse.Testing;
using Google.Protobuf;
using Google.Protobuf.WellKnownTypes;
using Grpc.Core;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Xunit.Abstractions;
using Wire = Dse.Coordinator.Grpc;

namespace Dse.Fuzz.Tests;

/// <summary>
/// Every request of the coordinator service (protos/dse/coordinator/v1/coordinator.proto) as raw, random and mutated
/// bytes against a journaled coordinator on a loopback server: each call answers within its deadline with a documented
/// status (never UNKNOWN or INTERNAL), a refused call leaves the cluster state unchanged, and the service still serves.
/// </summary>
[Trait("Category", "Fuzz")]
public sealed class CoordinatorGrpcFuzzTests(ITestOutputHelper output)
{
    private const string Service = "dse.coordinator.v1.Coordinator";

    private static readonly string[] Methods =
        ["Connect", "ReportPersisted", "AcknowledgeRollback", "Resync", "Heartbeat", "GetState", "WaitForChange", "RemoveParticipant"];

    [Fact]
    public async Task EveryMethod_MutatedRequests_DocumentedStatusAndNoChangeWhenRefused()
    {
        var store = new InMemoryCoordinatorLogStore();
        await using var server = await LoopbackGrpcServer.StartAsync(
            app => app.MapDseCoordinator(),
            services => services.AddDseCoordinator(_ => new InMemoryCoordinatorLog(store), options =>
            {
                options.HeartbeatTimeout = null;
                options.LongPollTimeout = TimeSpan.FromMilliseconds(200);
            }));
        var invoker = server.Channel.CreateCallInvoker();
        var findings = new GrpcFindings();
        var run = FuzzRun.Start($"{nameof(CoordinatorGrpcFuzzTests)}.{nameof(EveryMethod_MutatedRequests_DocumentedStatusAndNoChangeWhenRefused)}", output, defaultInputs: 600);

        // Two participants to talk about.
        foreach (long id in new long[] { 1, 2 })
        {
            var connected = await RawGrpc.UnaryAsync(invoker, Service, "Connect", new Wire.ConnectRequest { ObjectId = id }.ToByteArray());
            Assert.True(connected.IsOk, $"connect {id}: {connected}");
        }

        await run.RunAsync(async (seed, random) =>
        {
            var state = await StateAsync(invoker);
            string method = Methods[random.Next(Methods.Length)];
            var valid = Enumerable.Range(0, 3).Select(_ => ValidRequest(method, random, state)).ToList();
            var (request, how) = ProtoInputs.Next(random, valid);

            var outcome = await RawGrpc.UnaryAsync(invoker, Service, method, request);
            run.Tally(outcome.Status.ToString());
            string context = $"{method} {CodecCheck.Hex(request)} ({how}) answered {outcome}";
            if (!findings.Check(method, outcome, request, how, seed) && !outcome.IsOk)
            {
                // Refused: nothing changed.
                var after = await StateAsync(invoker);
                Assert.True(state.Equals(after), $"a refused call changed the cluster state: {context}\nbefore {state}\nafter  {after}");
            }

            // Still serving.
            var probe = await RawGrpc.UnaryAsync(invoker, Service, "GetState", []);
            Assert.True(probe.IsOk, $"GetState after {context}: {probe}");
        }, stateful: true);

        var fresh = await RawGrpc.UnaryAsync(invoker, Service, "Connect", new Wire.ConnectRequest { ObjectId = 1_000 }.ToByteArray());
        Assert.True(fresh.IsOk, $"a new participant's connect after the run: {fresh}");
        findings.AssertNone(run, server.Logs);
    }

    private static async Task<Wire.ClusterState> StateAsync(CallInvoker invoker)
    {
        var outcome = await RawGrpc.UnaryAsync(invoker, Service, "GetState", []);
        Assert.True(outcome.IsOk, $"GetState: {outcome}");
        return Wire.GetStateResponse.Parser.ParseFrom(outcome.Response).State;
    }

    /// <summary>A well-formed request of <paramref name="method"/> about the participants and world-lines around the current state.</summary>
    private static IMessage ValidRequest(string method, Random random, Wire.ClusterState state)
    {
        long Id() => random.Next(6) == 0 ? random.Next(3, 9) : random.Next(1, 3);
        long WorldLine() => Math.Max(0, state.WorldLine + random.Next(-1, 2));
        long Version() => random.Next(1, 6);
        Wire.VersionReport Report(long version) => new()
        {
            Version = version,
            WorldLine = WorldLine(),
            Dependencies = { Enumerable.Range(0, random.Next(0, 3)).Select(_ => new Wire.ObjectVersion { ObjectId = Id(), Version = Version() }) },
        };
        IEnumerable<Wire.VersionReport> Ascending() => Enumerable.Range(1, random.Next(0, 4)).Select(v => Report(v));

        IMessage message = method switch
        {
            "Connect" => new Wire.ConnectRequest { ObjectId = Id(), PersistedVersions = { Ascending() } },
            "ReportPersisted" => new Wire.ReportPersistedRequest { ObjectId = Id(), Report = Report(Version()) },
            "AcknowledgeRollback" => new Wire.AcknowledgeRollbackRequest { ObjectId = Id(), WorldLine = WorldLine(), KeptThrough = random.Next(0, 4) },
            "Resync" => new Wire.ResyncRequest
            {
                ObjectId = Id(),
                WorldLine = WorldLine(),
                DurableVersions = { Ascending() },
                CommittedView = { state.Committed.Where(_ => random.Next(2) == 0) },
            },
            "Heartbeat" => new Wire.HeartbeatRequest { ObjectId = Id() },
            "GetState" => new Wire.GetStateRequest(),
            "WaitForChange" => new Wire.WaitForChangeRequest
            {
                KnownEpoch = Math.Max(0, state.Epoch + random.Next(-1, 2)),
                MaxWait = Duration.FromTimeSpan(TimeSpan.FromMilliseconds(random.Next(0, 100))),
            },
            _ => new Wire.RemoveParticipantRequest { ObjectId = random.Next(4) == 0 ? Id() : random.Next(3, 9) },
        };
        return message;
    }
}
