using System.Net;
using Dse.Darq.Grpc;
using Dse.Darq.Grpc.V1;
using Dse.Grpc;
using Dse.Storage;
using Dse.Testing;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;

namespace Dse.Darq.Tests;

/// <summary>
/// <c>/metrics</c> of a host with <c>AddDseTelemetry</c> and <c>MapDseMetrics</c> serves every instrument docs/metrics.md
/// lists, once the traffic here has taken each instrument's code path: producers, processors, deliveries, checkpoints and
/// activities of DARQs; a rollback under general speculation and the headers it makes stale; backpressure; calls to the
/// DarqService; a DSE call to a server without DSE and one refused for its missing credential. The exporter serves an
/// instrument only once it recorded, so a documented instrument that nothing records fails here. Meters are process-wide:
/// the host's provider sees all of it (and whatever tests running beside this one record, which adds series, never
/// removes one).
/// </summary>
public sealed class MetricsEndpointObservabilityTests : IAsyncLifetime
{
    /// <summary>A guard against a hang, not a timing assertion: every wait here ends on an event.</summary>
    private static readonly TimeSpan HangGuard = TimeSpan.FromSeconds(60);

    /// <summary>Disposed in reverse order: what was opened last closes first, the host last.</summary>
    private readonly List<IAsyncDisposable> _owned = [];

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        for (int i = _owned.Count - 1; i >= 0; i--)
        {
            await _owned[i].DisposeAsync();
        }
    }

    [Fact]
    public async Task MetricsEndpoint_TrafficThroughEveryDocumentedPath_ServesEveryDocumentedInstrument()
    {
        using var guard = new CancellationTokenSource(HangGuard);
        var token = guard.Token;
        var documented = DocumentedInstruments.Read();
        Assert.Contains(documented, i => i.Series == "dse_versions_persisted_total");
        Assert.Contains(documented, i => i.Series == "dse_darq_commit_duration_milliseconds_bucket");

        var registry = new DarqRegistry();
        var host = Own(await LoopbackGrpcServer.StartAsync(
            app =>
            {
                app.MapDarqService();
                app.MapDseMetrics();
            },
            services =>
            {
                services.AddSingleton<IDarqResolver>(registry);
                services.AddDseTelemetry();
            }));

        await ProduceAndStepAsync(token);
        await DeliverAsync(token);
        await CallDarqServiceAsync(host, registry, token);
        var bystander = await RollBackAsync(token);
        await CallWithDseHeadersAsync(host, registry, bystander.DseStateObject!, token);
        await HoldForBackpressureAsync(token);

        var served = await ScrapeAsync(host);

        var missing = documented.Where(i => !served.Contains(i.Series)).Select(i => $"{i.Name} (no {i.Series})").ToList();
        Assert.True(missing.Count == 0, $"{missing.Count} of the {documented.Count} instruments docs/metrics.md lists are not on /metrics: {string.Join(", ", missing)}");
    }

    /// <summary>
    /// A DARQ's producers and processor: enqueues, a duplicate, a sequence gap, a retired producer, a commit; a replay of
    /// messages that waited in the log only (an IN budget of 0) and were read back; steps and a refused one; a checkpoint
    /// and a refused one; an activity that fails once and is retried.
    /// </summary>
    private async Task ProduceAndStepAsync(CancellationToken token)
    {
        var darq = Own(await new DarqTestStorage().OpenAsync(o =>
        {
            o.Name = "metrics-steps";
            o.ContiguousProducerSequences = true;
            o.MaxBufferedInBytes = 0;
        }));
        await darq.EnqueueAsync(7, 0, "m0".Bytes(), token);
        await darq.EnqueueAsync(7, 1, "m1".Bytes(), token);
        Assert.True((await darq.EnqueueAsync(7, 1, "m1".Bytes(), token)).IsDuplicate);
        await Assert.ThrowsAsync<DarqSequenceGapException>(async () => await darq.EnqueueAsync(7, 5, "m5".Bytes(), token));
        Assert.True(await darq.RetireProducerAsync(7, token));
        await darq.CommitAsync(token);
        Assert.Equal(2, darq.SpilledInCount);

        // With nothing in memory the feed reads one message back at a time: the next once the processor consumed the last.
        var processor = await darq.RegisterProcessorAsync(token);
        var first = await processor.Messages.ReadAsync(token);
        await processor.StepAsync(new DarqStep().Consume(first).AddSelf("+1".Bytes()).AddSelf("+2".Bytes()), token);
        await Assert.ThrowsAsync<DarqStepRejectedException>(async () => await processor.StepAsync(new DarqStep().Consume(first), token));
        var second = await processor.Messages.ReadAsync(token);

        var checkpoint = await processor.CheckpointAsync(_ => ["=3".Bytes()], token);
        Assert.Equal(2, checkpoint.ReplacedLsns.Count);
        await Assert.ThrowsAsync<DarqStepRejectedException>(async () => await processor.CheckpointAsync([second.Lsn], [], token));

        int attempts = 0;
        await using var runner = new DarqActivityRunner(processor, new DarqActivityRunnerOptions
        {
            Handlers =
            {
                ["charge"] = (_, _) => Interlocked.Increment(ref attempts) == 1
                    ? throw new IOException("service unavailable")
                    : ValueTask.FromResult<ReadOnlyMemory<byte>>("charged".Bytes()),
            },
            Completer = (_, receipt, completion) => completion.AddSelf(receipt),
            RetryMinDelay = TimeSpan.FromMilliseconds(1),
            RetryMaxDelay = TimeSpan.FromMilliseconds(4),
        });
        long activity = (await runner.StepAsync(new DarqStep().Consume(second).AddActivity("charge", "7".Bytes()), token)).SelfLsns[0];
        await runner.WhenCompletedAsync(activity).WaitAsync(token);
        Assert.Equal(2, attempts);
    }

    /// <summary>OUT delivery between DARQs: one message delivered, one refused for good (which parks its destination), one discarded.</summary>
    private async Task DeliverAsync(CancellationToken token)
    {
        var destinations = new DarqDestinationRegistry();
        destinations.Add(Own(await new DarqTestStorage().OpenAsync(o => o.Name = "metrics-to")));
        destinations.Add(Own(await new DarqTestStorage().OpenAsync(o =>
        {
            o.Name = "metrics-small";
            o.MaxMessageSize = 4;
        })));
        var source = Own(await new DarqTestStorage().OpenAsync(o =>
        {
            DarqDeliveryTests.Source("metrics-source", destinations)(o);
            o.ParkedDeliveryRetryInterval = Timeout.InfiniteTimeSpan;
        }));
        var processor = await source.RegisterProcessorAsync(token);

        var step = await processor.StepAsync(
            new DarqStep().AddOut("metrics-to", "x".Bytes()).AddOut("metrics-small", "too large".Bytes()).AddOut("metrics-nowhere", "never".Bytes()), token);
        await source.CommitAsync(token);

        await source.WaitForDeliveredAsync(step.OutLsns[0], token);
        await Assert.ThrowsAsync<DarqDeliveryRefusedException>(() => source.WaitForDeliveredAsync(step.OutLsns[1], token).AsTask());
        Assert.True(await source.DiscardOutAsync(step.OutLsns[2], token));
    }

    /// <summary>The host's DarqService: a request for a DARQ it does not host, a remote processor's stream, an enqueue resent after its reply was lost.</summary>
    private async Task CallDarqServiceAsync(LoopbackGrpcServer host, DarqRegistry registry, CancellationToken token)
    {
        registry.Add(Own(await new DarqTestStorage().OpenAsync(o => o.Name = "metrics-remote")));
        var client = new DarqService.DarqServiceClient(host.Channel);

        var missing = await Assert.ThrowsAsync<RpcException>(async () => await client.EnqueueAsync(
            new EnqueueRequest { Darq = "metrics-missing", Payload = ByteString.CopyFromUtf8("x") }, cancellationToken: token));
        Assert.Equal(StatusCode.NotFound, missing.StatusCode);

        using (var processor = await RemoteDarqProcessor.RegisterAsync(host.Channel, "metrics-remote", token))
        {
            Assert.Equal(0, processor.ReplayCount);
        }

        var lost = new LoseFirstReplyInterceptor();
        var producer = new RemoteDarqProducer(host.Channel.Intercept(lost), "metrics-remote", producerId: 1) { RetryDelay = TimeSpan.FromMilliseconds(1) };
        await producer.EnqueueAsync("resent".Bytes(), waitDurable: false, cancellationToken: token);
        Assert.Equal(2, lost.Calls);
    }

    /// <summary>
    /// General speculation, a restore during a delivery turn (as <see cref="DarqSpeculationDeliveryOrderTests"/> stages it):
    /// S writes L1 and L2 to D (L2 beyond S's OUT budget, so read back from the log); the turn stops in that read after L1
    /// was acknowledged; D crashes before persisting the version that took L1, and its restart rolls S back (restoring) while
    /// the bystander Y, which depends on nothing lost, keeps its state. Then Y takes a message from a version ahead of its
    /// own (renumbered), refuses one from D's lost version (discarded) and one naming a participant nobody knows (rejected).
    /// </summary>
    /// <returns>The bystander, connected.</returns>
    private async Task<Darq> RollBackAsync(CancellationToken token)
    {
        var coordinator = Own(new ClusterCoordinator());
        var destinations = new TestDestinations();
        var y = Own(await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("metrics-y", 3, coordinator)));

        var sLog = new HoldingDevice(DseDevices.CreateInMemory(new InMemoryStorage()));
        var sOptions = DarqTestStorage.Options(sLog, DseDevices.CreateInMemory(new InMemoryStorage()));
        DarqGeneralSpeculationTests.General("metrics-s", 1, coordinator, destinations)(sOptions);
        sOptions.MaxBufferedOutBytes = "L1".Length;
        var s = Own(await Darq.OpenAsync(sOptions));
        var sProcessor = await s.RegisterProcessorAsync(token);

        var dStorage = new DarqTestStorage();
        long l1;
        long l2;
        DseHeader stale;
        await using (var d = await dStorage.OpenAsync(DarqGeneralSpeculationTests.General("metrics-d", 2, coordinator)))
        {
            destinations.Registry.Add(d);

            // L1's delivery waits at the gate until S's version 1 is committed: its acknowledgement lands in S's version 2,
            // which depends on D's version 1. The turn holding [L1, L2] then stops in the read of L2's payload.
            await destinations.Gate.WaitAsync(token);
            var step = await sProcessor.StepAsync(new DarqStep().AddOut("metrics-d", "L1".Bytes()).AddOut("metrics-d", "L2".Bytes()), token);
            (l1, l2) = (step.OutLsns[0], step.OutLsns[1]);
            await s.DseStateObject!.AdvanceVersionAsync(token);
            await s.DseStateObject.WaitForCommitAsync(1, 0, token);
            sLog.HoldReads();
            destinations.Gate.Release();
            await s.WaitForDeliveredAsync(l1, token);
            await sLog.FirstReadHeld.WaitAsync(token);

            // A header of D's version 1, which the crash loses.
            await d.DseStateObject!.StartLocalActionAsync(token);
            stale = d.DseStateObject.EndAction();
            dStorage.CrashNow();
        }

        // D's restart rolls S back to version 1 (L1 is pending again) and Y keeps its state; the turn goes on, and checks
        // for an earlier pending message before it sends L2.
        var d2 = Own(await dStorage.OpenAsync(DarqGeneralSpeculationTests.General("metrics-d", 2, coordinator)));
        destinations.Registry.Add(d2);
        await s.DseStateObject.RefreshAsync(token);
        await y.DseStateObject!.RefreshAsync(token);
        Assert.Equal(1, s.DseStateObject.WorldLine);
        Assert.Equal(1, y.DseStateObject.WorldLine);
        Assert.Equal(2, s.PendingOutCount);
        sLog.ReleaseReads();
        await s.WaitForDeliveredAsync(l1, token);
        await s.WaitForDeliveredAsync(l2, token);

        // Y's version holds no action, and S's is ahead of it: Y moves up to S's number without persisting.
        await y.DseStateObject.AdvanceVersionAsync(token);
        await s.DseStateObject.AdvanceVersionAsync(token);
        await s.DseStateObject.AdvanceVersionAsync(token);
        await s.DseStateObject.StartLocalActionAsync(token);
        var ahead = s.DseStateObject.EndAction();
        Assert.True(ahead.Origin.Version > y.DseStateObject.CurrentVersion);
        await y.ReceiveSpeculativeAsync(new DarqDelivery("metrics-s", 1, "metrics-y", "ahead".Bytes()) { DseHeader = ahead.ToArray() }, token);
        Assert.Equal(ahead.Origin.Version, y.DseStateObject.CurrentVersion);

        await Assert.ThrowsAsync<DarqMessageRefusedException>(async () =>
            await y.ReceiveSpeculativeAsync(new DarqDelivery("metrics-d", 1, "metrics-y", "stale".Bytes()) { DseHeader = stale.ToArray() }, token));
        var unknown = DseHeader.FromOrigin(99, y.DseStateObject.WorldLine, 1);
        await Assert.ThrowsAsync<DseHeaderRejectedException>(async () =>
            await y.ReceiveSpeculativeAsync(new DarqDelivery("metrics-unknown", 1, "metrics-y", "unknown".Bytes()) { DseHeader = unknown.ToArray() }, token));
        return y;
    }

    /// <summary>
    /// DSE calls on the host's DarqService, which has no DSE: an enqueue from inside an sthread of <paramref name="owner"/>
    /// comes back without a header. Then a server that makes the DarqService speculative on <paramref name="owner"/>,
    /// accepting headers from participant 1 only, refuses a call whose header comes without a credential.
    /// </summary>
    private async Task CallWithDseHeadersAsync(LoopbackGrpcServer host, DarqRegistry registry, StateObject owner, CancellationToken token)
    {
        var client = new DarqService.DarqServiceClient(host.Channel.Intercept(new DseClientInterceptor()));
        await owner.StartLocalActionAsync(token);
        using (DseCall.Use(owner.Detach()))
        {
            await client.EnqueueAsync(new EnqueueRequest { Darq = "metrics-remote", Payload = ByteString.CopyFromUtf8("no header back") }, cancellationToken: token);
        }

        var participants = DseCredentials.Parse([$"participant 1 {DseCredentials.HashToken(DseCredentials.CreateToken())}"], "participants");
        var authentication = new DseHeaderAuthentication(participants);
        await using var speculative = await LoopbackGrpcServer.StartAsync(
            app => app.MapDarqService(),
            services =>
            {
                services.AddSingleton<IDarqResolver>(registry);
                services.AddGrpc(o => o.Interceptors.Add<DseServerInterceptor>(owner, authentication));
            });
        var headers = new Metadata();
        DseMetadata.SetHeader(headers, DseHeader.FromOrigin(owner.Id, owner.WorldLine, owner.CurrentVersion));

        var refused = await Assert.ThrowsAsync<RpcException>(async () => await new DarqService.DarqServiceClient(speculative.Channel).EnqueueAsync(
            new EnqueueRequest { Darq = "metrics-remote", Payload = ByteString.CopyFromUtf8("refused") }, headers, cancellationToken: token));
        Assert.Equal(StatusCode.Unauthenticated, refused.StatusCode);
    }

    /// <summary>
    /// General speculation's backpressure (as <see cref="DarqSpeculationPacingTests"/> stages it): A depends on B's first
    /// version, which B does not persist, so none of A's versions commits; after two, A's next enqueue waits until B persists.
    /// </summary>
    private async Task HoldForBackpressureAsync(CancellationToken token)
    {
        var coordinator = Own(new ClusterCoordinator());
        var a = Own(await new DarqTestStorage().OpenAsync(o =>
        {
            DarqGeneralSpeculationTests.General("metrics-paced", 1, coordinator)(o);
            o.MaxUncommittedVersions = 2;
        }));
        var toA = new DarqDestinationRegistry();
        toA.Add(a);
        var b = Own(await new DarqTestStorage().OpenAsync(DarqGeneralSpeculationTests.General("metrics-pacer", 2, coordinator, toA)));
        var sent = await (await b.RegisterProcessorAsync(token)).StepAsync(new DarqStep().AddOut("metrics-paced", "hold".Bytes()), token);
        await b.WaitForDeliveredAsync(sent.OutLsns[0], token);

        await a.EnqueueAsync(5, 1, "one".Bytes(), token);
        await a.DseStateObject!.AdvanceVersionAsync(token);
        await a.EnqueueAsync(5, 2, "two".Bytes(), token);
        await a.DseStateObject.AdvanceVersionAsync(token);
        Assert.True(a.IsBackpressured);

        var held = a.EnqueueAsync(5, 3, "three".Bytes(), token).AsTask();
        Assert.False(held.IsCompleted);
        await b.DseStateObject!.AdvanceVersionAsync(token);
        Assert.False((await held.WaitAsync(token)).IsDuplicate);
    }

    /// <summary>The metric names of the host's scrape (the exporter speaks plaintext HTTP/2 here, with prior knowledge).</summary>
    private static async Task<HashSet<string>> ScrapeAsync(LoopbackGrpcServer host)
    {
        using var http = new HttpClient
        {
            DefaultRequestVersion = HttpVersion.Version20,
            DefaultVersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };
        using var response = await http.GetAsync(new Uri(host.Address, "/metrics"));
        response.EnsureSuccessStatusCode();
        string text = await response.Content.ReadAsStringAsync();

        var names = new HashSet<string>(StringComparer.Ordinal);
        foreach (string line in text.Split('\n'))
        {
            if (line.Length > 0 && line[0] != '#')
            {
                names.Add(line[..line.IndexOfAny(['{', ' '])]);
            }
        }

        return names;
    }

    /// <summary>Disposes <paramref name="owned"/> when the test ends.</summary>
    private T Own<T>(T owned)
        where T : IAsyncDisposable
    {
        _owned.Add(owned);
        return owned;
    }
}
