using Dse.Benchmarks.Harness;
using Dse.Benchmarks.Scenarios.Interceptor;
using Dse.Grpc;
using Dse.Services;
using Grpc.Core;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// Maximum throughput of the key-value store over gRPC, three servers in one run: no DSE (a thin wrapper over the same
/// FasterKV store, checkpointed on the same period), DSE by hand (ManualSpeculativeKvService) and DSE through the
/// server interceptor (SpeculativeKvService + DseServerInterceptor). One closed-loop load for all: 64 callers over two
/// HTTP/2 connections, 50/50 get/put on 1024 keys, 64-byte values. The DSE servers' callers are speculative: each call
/// carries a DSE header (written once by hand into the call metadata; the callers do not parse the header the server
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
    public string Description => "KV over gRPC, max ops/s: no DSE vs DSE by hand vs DSE server interceptor; 64 callers, 50/50 get/put, 10 ms group commit.";

    /// <inheritdoc />
    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var ct = context.CancellationToken;
        var touch = context.Pick(TimeSpan.FromSeconds(2), TimeSpan.FromMilliseconds(300));
        var warmup = context.Pick(TimeSpan.FromSeconds(1), TimeSpan.FromMilliseconds(100));
        var window = context.Pick(TimeSpan.FromSeconds(5), TimeSpan.FromMilliseconds(500));
        int rounds = context.Pick(3, 1);

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

            var plainStore = new PlainKvStore(StoreOptions(root, "nodse"), GroupCommit);
            servers.Add(await KvServer.StartNoDseAsync(plainStore).ConfigureAwait(false));
            var manualKv = await OpenKvAsync(coordinator, ManualKvId, StoreOptions(root, "manual"), ct).ConfigureAwait(false);
            servers.Add(await KvServer.StartDseAsync(manualKv, manual: true).ConfigureAwait(false));
            var interceptorKv = await OpenKvAsync(coordinator, InterceptorKvId, StoreOptions(root, "interceptor"), ct).ConfigureAwait(false);
            servers.Add(await KvServer.StartDseAsync(interceptorKv, manual: false).ConfigureAwait(false));
            foreach (var server in servers)
            {
                var load = new KvLoad(server.Address, Channels, Callers);
                loads.Add(load);
                await load.PopulateAsync(Options(server)).ConfigureAwait(false);
            }

            CallOptions Options(KvServer server) => server.Variant == KvServerVariant.NoDse ? plain : speculative;

            // Every variant once, unmeasured, so all of them run tier-1 code before the first round.
            for (int i = 0; i < servers.Count; i++)
            {
                var (ops, _) = await loads[i].RunAsync(Options(servers[i]), touch, TimeSpan.FromMilliseconds(200), ct).ConfigureAwait(false);
                context.Log.WriteLine($"interceptor: warm-up {servers[i].Variant}: {ops:F0} ops/s");
            }

            var samples = new List<double>[servers.Count];
            var cpu = new List<double>[servers.Count];
            for (int i = 0; i < samples.Length; i++)
            {
                samples[i] = new List<double>(rounds);
                cpu[i] = new List<double>(rounds);
            }

            for (int round = 0; round < rounds; round++)
            {
                // Rotate the order each round, so no variant always runs first (or right after a given other one).
                var line = new System.Text.StringBuilder($"interceptor: round {round + 1}/{rounds}:");
                for (int j = 0; j < servers.Count; j++)
                {
                    int i = (j + round) % servers.Count;
                    var (ops, cpuPerCall) = await loads[i].RunAsync(Options(servers[i]), warmup, window, ct).ConfigureAwait(false);
                    samples[i].Add(ops);
                    cpu[i].Add(cpuPerCall);
                    line.Append($" {servers[i].Variant} {ops:F0} ({cpuPerCall:F1} us cpu/op)");
                }

                context.Log.WriteLine(line.Append(" ops/s").ToString());
            }

            double nodse = Stats.Median(samples[0]);
            double manual = Stats.Median(samples[1]);
            double interceptor = Stats.Median(samples[2]);
            context.Log.WriteLine($"interceptor: persistence over the run: no-DSE {plainStore.Checkpoints} checkpoints, manual at version {manualKv.CurrentVersion}, interceptor at version {interceptorKv.CurrentVersion}");
            context.Log.WriteLine($"interceptor: medians no-DSE {nodse:F0}, manual {manual:F0} ({manual / nodse:F3}x), interceptor {interceptor:F0} ({interceptor / nodse:F3}x) ops/s; {Environment.ProcessorCount} cores");
            return new ScenarioResults()
                .Add("nodse_ops", nodse, 0)
                .Add("manual_ops", manual, 0)
                .Add("interceptor_ops", interceptor, 0)
                .Add("manual_ratio", manual / nodse, 3)
                .Add("interceptor_ratio", interceptor / nodse, 3)
                .Add("nodse_cpu_us", Stats.Median(cpu[0]), 1)
                .Add("manual_cpu_us", Stats.Median(cpu[1]), 1)
                .Add("interceptor_cpu_us", Stats.Median(cpu[2]), 1)
                .Add("manual_cpu_ratio", Stats.Median(cpu[1]) / Stats.Median(cpu[0]), 3)
                .Add("interceptor_cpu_ratio", Stats.Median(cpu[2]) / Stats.Median(cpu[0]), 3)
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
}
