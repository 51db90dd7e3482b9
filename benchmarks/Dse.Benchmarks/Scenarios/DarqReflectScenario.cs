using System.Buffers.Binary;
using System.Collections.Concurrent;
using System.Diagnostics;
using Dse.Benchmarks.Harness;
using Dse.Darq;

namespace Dse.Benchmarks.Scenarios;

/// <summary>
/// DARQ speculation (paper Fig. 10): a message reflected through a chain of k = 1..5 co-located DARQs, each with a
/// processor that forwards it as an OUT message to the next; the client reads the last DARQ's output only once it is
/// recoverable (a barrier). General speculation (LibDse, OUT leaves before it is committed) against speculation off
/// (nothing is seen or sent before it is committed), both with a 10 ms commit interval. One message in flight at a time.
/// </summary>
public sealed class DarqReflectScenario : IScenario
{
    private const int MaxHops = 5;
    private static readonly TimeSpan CommitInterval = TimeSpan.FromMilliseconds(10);

    public string Name => "darq-reflect";

    public string Description => "DARQ chain of 1..5 hops, general speculation vs off, 10 ms commit interval: end-to-end p50/p99.";

    public async Task<ScenarioResults> RunAsync(ScenarioContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        int messages = context.Pick(200, 10);
        var results = new ScenarioResults();
        var p50 = new Dictionary<(bool, int), double>();

        // An untimed chain first, so that JIT and first-use costs do not land on the first measured point.
        await MeasureAsync(2, speculative: true, 10, context.CancellationToken);
        for (int hops = 1; hops <= MaxHops; hops++)
        {
            foreach (bool speculative in new[] { true, false })
            {
                var latencies = await MeasureAsync(hops, speculative, messages, context.CancellationToken);
                string prefix = speculative ? "spec" : "nonspec";
                p50[(speculative, hops)] = Stats.Percentile(latencies, 0.5);
                results.Add($"{prefix}_p50_ms_{hops}hop", Stats.Percentile(latencies, 0.5), 2);
                results.Add($"{prefix}_p99_ms_{hops}hop", Stats.Percentile(latencies, 0.99), 2);
                context.Log.WriteLine($"darq-reflect: {hops} hop(s), {prefix}: p50 {Stats.Percentile(latencies, 0.5):F2} ms, p99 {Stats.Percentile(latencies, 0.99):F2} ms ({latencies.Length} messages)");
            }
        }

        return results
            .Add("spec_5hop_over_1hop", p50[(true, MaxHops)] / p50[(true, 1)], 2)
            .Add("spec_over_nonspec_5hop", p50[(true, MaxHops)] / p50[(false, MaxHops)], 2)
            .Add("messages_per_point", messages)
            .Add("commit_interval_ms", (long)CommitInterval.TotalMilliseconds);
    }

    /// <summary>Runs one chain and returns the sorted end-to-end latencies (enqueue at the first DARQ to the barrier after the last).</summary>
    private static async Task<double[]> MeasureAsync(int hops, bool speculative, int messages, CancellationToken cancellationToken)
    {
        using var bench = new DarqBench(inMemory: false);
        await using var coordinator = new ClusterCoordinator();
        var registry = new DarqDestinationRegistry();
        var chain = new List<Darq.Darq>(hops);
        var pending = new ConcurrentDictionary<long, TaskCompletionSource>();
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var processors = new List<Task>(hops);
        try
        {
            for (int i = 0; i < hops; i++)
            {
                var darq = await Darq.Darq.OpenAsync(new DarqOptions
                {
                    Name = $"hop{i}",
                    LogDevice = bench.NewDevice($"hop{i}"),
                    CommitDevice = bench.NewDevice($"hop{i}-commit"),
                    Destinations = registry,
                    DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(1),
                    DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(10),
                    Speculation = speculative ? DarqSpeculationMode.General : DarqSpeculationMode.Off,
                    CommitInterval = speculative ? Timeout.InfiniteTimeSpan : CommitInterval,
                    Dse = speculative ? new DseOptions { ObjectId = i + 1, GroupCommitPeriod = CommitInterval } : null,
                    Coordinator = speculative ? coordinator : null,
                }, cancellationToken: cancellationToken);
                chain.Add(darq);
                registry.Add(darq);
            }

            for (int i = 0; i < hops; i++)
            {
                var processor = await chain[i].RegisterProcessorAsync(cancellationToken);
                processors.Add(RunHopAsync(chain[i], processor, i + 1 < hops ? $"hop{i + 1}" : null, pending, stop.Token));
            }

            var latencies = new List<double>(messages);
            var payload = new byte[8];
            for (long id = 0; id < messages + 5; id++)
            {
                var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                pending[id] = done;
                BinaryPrimitives.WriteInt64LittleEndian(payload, id);
                long start = Stopwatch.GetTimestamp();
                await chain[0].EnqueueAsync(payload, cancellationToken);
                await done.Task.WaitAsync(TimeSpan.FromSeconds(60), cancellationToken);

                // The first few warm up the chain (JIT, first commits).
                if (id >= 5)
                {
                    latencies.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
                }
            }

            return [.. latencies.Order()];
        }
        finally
        {
            await stop.CancelAsync();
            foreach (var darq in chain)
            {
                await darq.DisposeAsync();
            }

            foreach (var processor in processors)
            {
                try
                {
                    await processor;
                }
                catch (Exception e) when (e is OperationCanceledException or System.Threading.Channels.ChannelClosedException or ObjectDisposedException)
                {
                    // The chain closed under the processors.
                }
            }
        }
    }

    /// <summary>A co-located processor: forwards each message to the next hop, or (last hop) consumes it and completes it after the barrier.</summary>
    private static async Task RunHopAsync(Darq.Darq darq, DarqProcessor processor, string? next, ConcurrentDictionary<long, TaskCompletionSource> pending,
        CancellationToken cancellationToken)
    {
        await foreach (var message in processor.ReadAllAsync(cancellationToken))
        {
            var step = new DarqStep().Consume(message.Lsn);
            if (next is not null)
            {
                step.AddOut(next, message.Payload);
            }

            await processor.StepAsync(step, cancellationToken);
            if (next is null)
            {
                // The client is an external consumer: it reads the output only once it can never be rolled back.
                await darq.WaitForRecoverableAsync(message.Lsn, cancellationToken);
                if (pending.TryRemove(BinaryPrimitives.ReadInt64LittleEndian(message.Payload.Span), out var done))
                {
                    done.TrySetResult();
                }
            }
        }
    }
}
