using System.Globalization;
using Dse.Darq.TestHost;
using Dse.Testing;
using Xunit.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>
/// The DARQ test host (a deduplicated producer and a co-located running-sum processor) killed with SIGKILL at a seeded
/// point, then started again in a new process on the same storage with the producer resending everything. Checks: every
/// enqueue acknowledged before the kill is acknowledged as a duplicate afterwards (it was durable); the processor's
/// final state consumed every value exactly once; the incarnation increased; and the storage, reopened once more in
/// this process, holds exactly that state and nothing unconsumed.
/// </summary>
internal static class DarqKillRestart
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(90);

    /// <summary>The host's producer batch (its last sequence number of a batch is a multiple of it).</summary>
    private const int HostBatch = 32;

    /// <summary>Batches granted ahead of the acknowledgements in the paced first run.</summary>
    private const int CreditsAhead = 3;

    public static async Task RunAsync(ITestOutputHelper output, string testName, long count, IReadOnlyList<string> storageArguments,
        Func<DarqOptions> reopen)
    {
        int seed = DarqSeed.Pick(output, testName);
        string replay = DarqSeed.Replay(seed, testName);
        var random = new Random(seed);
        long killAfter = random.NextInt64(count / 5, (count * 3 / 5) + 1);
        var arguments = new List<string>(storageArguments) { "--count", count.ToString(CultureInfo.InvariantCulture) };

        // First run, paced (the test grants batches a few at a time, so the host is mid-run whenever it is killed):
        // killed once killAfter enqueues were durably acknowledged.
        var acknowledgedBeforeKill = new HashSet<long>();
        long firstIncarnation = 0;
        var killPoint = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        DarqHostProcess? host = null;
        await using (var first = host = DarqHostProcess.Start([.. arguments, "--paced"], line =>
        {
            string[] parts = line.Split(' ');
            switch (parts[0])
            {
                case "READY":
                    firstIncarnation = long.Parse(parts[1], CultureInfo.InvariantCulture);
                    break;
                case "ACK":
                    lock (acknowledgedBeforeKill)
                    {
                        long sequence = long.Parse(parts[1], CultureInfo.InvariantCulture);
                        acknowledgedBeforeKill.Add(sequence);
                        if (acknowledgedBeforeKill.Count >= killAfter)
                        {
                            killPoint.TrySetResult();
                        }
                        else if (sequence % HostBatch == 0)
                        {
                            host?.TryWriteLine("GO");
                        }
                    }

                    break;
            }
        }))
        {
            for (int i = 0; i < CreditsAhead; i++)
            {
                first.TryWriteLine("GO");
            }

            await Task.WhenAny(killPoint.Task, first.Completion).WaitAsync(Timeout);
            Assert.True(killPoint.Task.IsCompleted, $"The first run ended before {killAfter} acknowledgements: {first.Describe()}\n{replay}");
            await first.KillHardAsync();
        }

        output.WriteLine($"killed after {acknowledgedBeforeKill.Count} acknowledgements (kill point {killAfter}), incarnation {firstIncarnation}");
        Assert.True(acknowledgedBeforeKill.Count < count, $"the first run acknowledged everything before the kill; {replay}");

        // Second run: the producer resends 1..count, then the end marker; the processor reports its final state.
        var acknowledged = new Dictionary<long, bool>();
        long secondIncarnation = 0;
        string? final = null;
        await using (var second = DarqHostProcess.Start([.. arguments, "--finish"], line =>
        {
            string[] parts = line.Split(' ');
            switch (parts[0])
            {
                case "READY":
                    secondIncarnation = long.Parse(parts[1], CultureInfo.InvariantCulture);
                    output.WriteLine($"restarted: incarnation {secondIncarnation}, replay of {parts[2]} messages");
                    break;
                case "ACK":
                    lock (acknowledged)
                    {
                        Assert.True(acknowledged.TryAdd(long.Parse(parts[1], CultureInfo.InvariantCulture), parts[2] == "1"), $"acknowledged twice: {line}");
                    }

                    break;
                case "FINAL":
                    final = line;
                    break;
            }
        }))
        {
            await second.Completion.WaitAsync(Timeout);
            Assert.True(second.ExitCode == 0, $"The second run failed: {second.Describe()}\n{replay}");
        }

        Assert.True(secondIncarnation > firstIncarnation, $"incarnation {secondIncarnation} after {firstIncarnation}; {replay}");
        Assert.Equal(count, acknowledged.Count);
        var lost = acknowledgedBeforeKill.Where(sequence => !acknowledged[sequence]).ToList();
        Assert.True(lost.Count == 0, $"acknowledged before the kill but not a duplicate after it: {string.Join(',', lost.Take(20))}; {replay}");
        long sum = count * (count + 1) / 2;
        Assert.True(final == $"FINAL {count} {sum} 0 0", $"final state '{final}', expected 'FINAL {count} {sum} 0 0' (count sum duplicates missing); {replay}");

        // Reopen in this process: one SELF message (the state), nothing unconsumed, the next incarnation.
        await using var darq = await Darq.OpenAsync(reopen());
        var processor = await darq.RegisterProcessorAsync();
        Assert.True(processor.Incarnation > secondIncarnation, replay);
        var replayed = processor.Drain();
        Assert.True(replayed.Count == 1 && replayed[0].Kind == DarqMessageKind.Self, $"replay holds {replayed.Count} messages; {replay}");
        var state = SumState.Decode(replayed[0].Payload.Span);
        Assert.Equal((count, sum, 0L, 0L), (state.Count, state.Sum, state.Duplicates, state.Missing));
        Assert.True((await darq.EnqueueAsync(HostStorage.ProducerId, count, "again".Bytes())).IsDuplicate, replay);
    }
}

/// <summary>Kill -9 of the DARQ test host on local files, restart in a new process.</summary>
[Trait("Category", "MultiProcess")]
[Trait("Category", "Recovery")]
public sealed class DarqMultiProcessTests(ITestOutputHelper output) : IDisposable
{
    private readonly string _directory = Path.Combine(Path.GetTempPath(), "dse-darq-mp-" + Guid.NewGuid().ToString("N"));

    [Fact]
    public Task KillNine_LocalFiles_RestartedProcessConsumesEveryMessageExactlyOnce()
        => DarqKillRestart.RunAsync(output, nameof(KillNine_LocalFiles_RestartedProcessConsumesEveryMessageExactlyOnce), 2000,
            ["--dir", _directory], () => HostStorage.LocalFiles(_directory));

    public void Dispose()
    {
        if (Directory.Exists(_directory))
        {
            Directory.Delete(_directory, recursive: true);
        }
    }
}

/// <summary>Kill -9 of the DARQ test host on Azure page blobs (Azurite), restart in a new process.</summary>
[Collection(DarqAzuriteCollection.Name)]
[Trait("Category", "MultiProcess")]
[Trait("Category", "Recovery")]
[Trait("Category", "Azure")]
public sealed class DarqPageBlobMultiProcessTests(AzuriteFixture azurite, ITestOutputHelper output) : IAsyncLifetime
{
    private readonly string _container = "darq-mp-" + Guid.NewGuid().ToString("N");

    [Fact]
    public Task KillNine_PageBlobs_RestartedProcessConsumesEveryMessageExactlyOnce()
        => DarqKillRestart.RunAsync(output, nameof(KillNine_PageBlobs_RestartedProcessConsumesEveryMessageExactlyOnce), 800,
            ["--connection", azurite.ConnectionString, "--container", _container],
            () => HostStorage.PageBlobs(azurite.ConnectionString, _container));

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await new Azure.Storage.Blobs.BlobContainerClient(azurite.ConnectionString, _container).DeleteIfExistsAsync();
}
