using Dse.Benchmarks.Harness;
using Dse.Benchmarks.Scenarios.Interceptor;
using Dse.Grpc;
using Dse.Services;
using Grpc.Core;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// Maximum throughput of the key-value store over gRPC, three servers and four variants in one run: no DSE (a thin
/// wrapper over the same FasterKV store, checkpointed on the same period); DSE by hand (ManualSpeculativeKvService),
/// its callers' header in the request message and, as a second variant, in call metadata; and DSE through the server
/// interceptor (SpeculativeKvService + DseServerInterceptor, header in metadata). One closed-loop load for all: 64
/// callers over two HTTP/2 connections, 50/50 get/put on 1024 keys, 64-byte values. The DSE servers' callers are
/// speculative: each call carries a DSE header (written once by hand; the callers do not parse the header the server
/// returns, so only server-side DSE cost is measured). Group commit every 10 ms. The variants are interleaved, round by
/// round, and each reports the median over rounds. docs/benchmarks.md (## interceptor).
/// </summary>
public sealed class InterceptorScenario : IScenario
{
    private const int Callers = 64;
    private const int Channels = 2;
    private const long ClientId = 1;
    private const long ManualKvId = 2;
    private const long InterceptorKvId = 3;

    private static readonly TimeSpan GroupCommit = TimeSpan.FromMilliseconds(10);

    /// <inheritdoc />
    public string Name => "interceptor";

    /// <inheritdoc />
    public string Description => "KV over gRPC, max ops/s: no DSE vs DSE by hand (header in the message, or in metadata) vs DSE server interceptor; 64 callers, 50/50 get/put, 10 ms group commit.";

    /// <inheritdoc />
    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var ct = context.CancellationToken;
        var touch = context.Pick(TimeSpan.FromSeconds(2), TimeSpan.FromMilliseconds(300));
        var warmup = context.Pick(TimeSpan.FromSeconds(1), TimeSpan.FromMilliseconds(100));
        var window = context.Pick(TimeSpan.FromSeconds(5), TimeSpan.FromMilliseconds(500));

        string root = Path.Combine(Path.GetTempPath(), "dse-bench-interceptor-" + Guid.NewGuid().ToString("N"));
        await using var coordinator = new ClusterCoordinator();
        var servers = new List<KvServer>();
        var loads = new List<KvLoad>();
        NoopStateObject? client = null;
        try
        {
            // The speculative callers' state: a header from the client's vertex, sent with every call to a DSE server.
            client = await NoopStateObject.ConnectNewAsync(coordinator, ClientId, runBackgroundTasks: true, GroupCommit).ConfigureAwait(false);
            await client.StartLocalActionAsync(ct).ConfigureAwait(false);
            var headers = new Metadata();
            DseMetadata.SetHeader(headers, client.EndAction());
            var speculative = new CallOptions(headers: headers);
            var plain = new CallOptions();

            var messageHeader = Google.Protobuf.ByteString.CopyFrom(headers.GetValueBytes(DseMetadata.HeaderKey));
            var plainStore = new PlainKvStore(StoreOptions(root, "nodse"), GroupCommit);
            servers.Add(await KvServer.StartNoDseAsync(plainStore).ConfigureAwait(false));
            var manualKv = await OpenKvAsync(coordinator, ManualKvId, StoreOptions(root, "manual"), ct).ConfigureAwait(false);
            servers.Add(await KvServer.StartDseAsync(manualKv, manual: true).ConfigureAwait(false));
            var interceptorKv = await OpenKvAsync(coordinator, InterceptorKvId, StoreOptions(root, "interceptor"), ct).ConfigureAwait(false);
            servers.Add(await KvServer.StartDseAsync(interceptorKv, manual: false).ConfigureAwait(false));
            foreach (var server in servers)
            {
                loads.Add(new KvLoad(server.Address, Channels, Callers));
            }

            // The manual server serves two variants, the caller's header in the request message or in call metadata.
            var empty = Google.Protobuf.ByteString.Empty;
            Variant[] variants =
            [
                new("nodse", "no-DSE", loads[0], plain, empty),
                new("manual", "manual", loads[1], plain, messageHeader),
                new("manual_metadata", "manual-metadata", loads[1], speculative, empty),
                new("interceptor", "interceptor", loads[2], speculative, empty),
            ];
            await loads[0].PopulateAsync(plain, empty).ConfigureAwait(false);
            await loads[1].PopulateAsync(plain, messageHeader).ConfigureAwait(false);
            await loads[2].PopulateAsync(speculative, empty).ConfigureAwait(false);

            // Every variant once, unmeasured, so all of them run tier-1 code before the first round.
            foreach (var variant in variants)
            {
                var (ops, _) = await variant.RunAsync(touch, TimeSpan.FromMilliseconds(200), ct).ConfigureAwait(false);
                context.Log.WriteLine($"interceptor: warm-up {variant.Label}: {ops:F0} ops/s");
            }

            // As many rounds as variants in a full run, so that the rotation puts each variant first exactly once.
            int rounds = context.Pick(variants.Length, 1);
            var samples = new List<double>[variants.Length];
            var cpu = new List<double>[variants.Length];
            for (int i = 0; i < samples.Length; i++)
            {
                samples[i] = new List<double>(rounds);
                cpu[i] = new List<double>(rounds);
            }

            for (int round = 0; round < rounds; round++)
            {
                // Rotate the order each round, so no variant always runs first (or right after a given other one).
                var line = new System.Text.StringBuilder($"interceptor: round {round + 1}/{rounds}:");
                for (int j = 0; j < variants.Length; j++)
                {
                    int i = (j + round) % variants.Length;
                    var (ops, cpuPerCall) = await variants[i].RunAsync(warmup, window, ct).ConfigureAwait(false);
                    samples[i].Add(ops);
                    cpu[i].Add(cpuPerCall);
                    line.Append($" {variants[i].Label} {ops:F0} ({cpuPerCall:F1} us cpu/op)");
                }

                context.Log.WriteLine(line.Append(" ops/s").ToString());
            }

            double nodse = Stats.Median(samples[0]);
            double nodseCpu = Stats.Median(cpu[0]);
            context.Log.WriteLine($"interceptor: persistence over the run: no-DSE {plainStore.Checkpoints} checkpoints, manual at version {manualKv.CurrentVersion}, interceptor at version {interceptorKv.CurrentVersion}");
            var summary = new System.Text.StringBuilder($"interceptor: medians no-DSE {nodse:F0}");
            var results = new ScenarioResults();
            for (int i = 0; i < variants.Length; i++)
            {
                double ops = Stats.Median(samples[i]);
                results.Add($"{variants[i].Key}_ops", ops, 0);
                if (i > 0)
                {
                    summary.Append($", {variants[i].Label} {ops:F0} ({ops / nodse:F3}x)");
                    results.Add($"{variants[i].Key}_ratio", ops / nodse, 3);
                }
            }

            for (int i = 0; i < variants.Length; i++)
            {
                results.Add($"{variants[i].Key}_cpu_us", Stats.Median(cpu[i]), 1);
            }

            for (int i = 1; i < variants.Length; i++)
            {
                results.Add($"{variants[i].Key}_cpu_ratio", Stats.Median(cpu[i]) / nodseCpu, 3);
            }

            context.Log.WriteLine(summary.Append($" ops/s; {Environment.ProcessorCount} cores").ToString());
            return results
                .Add("callers", Callers)
                .Add("rounds", rounds)
                .Add("window_s", window.TotalSeconds, 1);
        }
        finally
        {
            foreach (var load in loads)
            {
                load.Dispose();
            }

            foreach (var server in servers)
            {
                await server.DisposeAsync().ConfigureAwait(false);
            }

            if (client is not null)
            {
                await client.DisposeAsync().ConfigureAwait(false);
            }

            TryDelete(root);
        }
    }

    /// <summary>The same store settings for all three: SpeculativeKv's defaults, each in its own directory.</summary>
    private static SpeculativeKvOptions StoreOptions(string root, string name) => new() { Directory = Path.Combine(root, name) };

    private static async Task<SpeculativeKv> OpenKvAsync(ClusterCoordinator coordinator, long id, SpeculativeKvOptions options, CancellationToken ct)
    {
        var kv = new SpeculativeKv(new DseOptions { ObjectId = id, GroupCommitPeriod = GroupCommit }, options);
        await kv.ConnectAsync(coordinator, ct).ConfigureAwait(false);
        return kv;
    }

    private static void TryDelete(string path)
    {
        try
        {
            Directory.Delete(path, recursive: true);
        }
        catch (IOException)
        {
            // Best effort: a file still closing; temp is cleaned by the OS.
        }
    }

    /// <summary>One measured variant: a server's load, with the caller's header in metadata (in the options), in the message, or absent.</summary>
    private sealed record Variant(string Key, string Label, KvLoad Load, CallOptions Options, Google.Protobuf.ByteString MessageHeader)
    {
        public Task<(double PerSecond, double CpuMicrosecondsPerCall)> RunAsync(TimeSpan warmup, TimeSpan window, CancellationToken ct) =>
            Load.RunAsync(Options, MessageHeader, warmup, window, ct);
    }
}
