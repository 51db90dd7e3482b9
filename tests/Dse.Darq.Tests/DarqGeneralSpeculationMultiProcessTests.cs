using System.Buffers.Binary;
using System.Globalization;
using Dse.Darq.Grpc;
using Dse.Darq.TestHost;
using Grpc.Net.Client;
using Xunit.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>
/// General speculation across OS processes with kill -9: a coordinator host process (file log), DARQ <c>a</c> in one
/// test-host process and DARQ <c>b</c> in another (<c>Dse.Darq.TestHost --general</c>), each a LibDse StateObject
/// connected with <c>GrpcCoordinatorClient</c> and served over gRPC. A's processor forwards each input to B, delivered
/// speculatively (before A commits, with the DSE header); B's processor keeps a running sum in SELF. This process
/// produces N values into A with a <see cref="RemoteDarqProducer"/>, in batches whose last enqueue waits for the
/// recoverable barrier. After a seeded number of batches it holds both DARQs' versions (the hosts' group commit stops;
/// both are levelled to one version above either, so commit ordering moves neither), appends one more batch without
/// waiting, waits until B consumed it (speculatively), kills A's process with SIGKILL, restarts it on the same storage
/// (same port when free) and resends every value. Checks: every value acknowledged through the barrier before the kill
/// is a duplicate after it; the held batch was lost by A (new again after the restart) and B, which had consumed it, was
/// rolled back (its processor superseded): the crash mattered, deterministically; B's state, read only through the
/// recoverable barrier (B prints it once the coordinator committed it), holds every value exactly once; the cluster
/// moved to a later world-line. The seed fixes the kill point; it is printed with the command that replays it. A failed
/// run keeps its directory (coordinator log, both DARQs) and names it.
/// </summary>
[Trait("Category", "MultiProcess")]
[Trait("Category", "Recovery")]
public sealed class DarqGeneralSpeculationMultiProcessTests(ITestOutputHelper output) : IDisposable
{
    private const long Count = 400;
    private const int Batch = 20;
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(60);
    private const string CoordinatorAnnouncement = "DSE coordinator listening on ";

    private readonly string _directory = Path.Combine(Path.GetTempPath(), "dse-darq-spec-mp-" + Guid.NewGuid().ToString("N"));
    private bool _passed;

    [Fact]
    public async Task KillNine_SourceOfSpeculativePipeline_DestinationCountsEveryInputExactlyOnce()
    {
        const string testName = nameof(KillNine_SourceOfSpeculativePipeline_DestinationCountsEveryInputExactlyOnce);
        int seed = DarqSeed.Pick(output, testName);
        string replay = DarqSeed.Replay(seed, testName);
        long killAfterBatches = new Random(seed).NextInt64(Count / Batch / 5, (Count / Batch * 3 / 5) + 1);
        Directory.CreateDirectory(_directory);
        using var guard = new CancellationTokenSource(TimeSpan.FromMinutes(3));

        var coordinatorLines = new Lines("coordinator");
        await using var coordinator = DarqHostProcess.StartProgram(
            DarqHostProcess.BuiltAssembly("src/Coordinator/Dse.Coordinator.Host", "Dse.Coordinator.Host.dll"),
            ["--port", "0", "--log", "file:" + Path.Combine(_directory, "coordinator.log"), "--heartbeat-timeout", "60s"],
            coordinatorLines.Add);
        string announced = await coordinatorLines.WaitForAsync(CoordinatorAnnouncement, coordinator, replay);
        string coordinatorAddress = announced[CoordinatorAnnouncement.Length..].Trim();

        // B first: A delivers to it.
        var bLines = new Lines("b");
        await using var b = StartDarq("b", 2, coordinatorAddress, 0, null, bLines);
        int bPort = Port(await bLines.WaitForAsync("LISTENING", b, replay));
        await bLines.WaitForAsync("READY", b, replay);

        // First run of A: killed right after appending the batch that follows the kill point, without waiting for it.
        var aLines = new Lines("a#1");
        var acknowledgedBeforeKill = new HashSet<long>();
        var speculativeTail = new List<long>();
        int aPort;
        await using (var a = StartDarq("a", 1, coordinatorAddress, 0, bPort, aLines))
        {
            aPort = Port(await aLines.WaitForAsync("LISTENING", a, replay));
            await aLines.WaitForAsync("READY", a, replay);
            using var channel = GrpcChannel.ForAddress($"http://127.0.0.1:{aPort}");
            var producer = new RemoteDarqProducer(channel, "a", HostStorage.ProducerId);
            for (long batch = 0; batch < killAfterBatches; batch++)
            {
                foreach (var (sequence, _) in await SendBatchAsync(producer, batch, waitForLast: true, guard.Token))
                {
                    acknowledgedBeforeKill.Add(sequence);
                }
            }

            // Hold both versions, level them one above both: from here nothing is persisted, so the batch below (appended
            // at A, forwarded and consumed at B) lives only in speculative versions when A is killed.
            int aMark = aLines.Mark(), bMark = bLines.Mark();
            Assert.True(a.TryWriteLine("MANUAL") && b.TryWriteLine("MANUAL"), replay);
            long held = Math.Max(Version(await aLines.WaitForAsync("MANUAL", a, replay, aMark)), Version(await bLines.WaitForAsync("MANUAL", b, replay, bMark)));
            (aMark, bMark) = (aLines.Mark(), bLines.Mark());
            Assert.True(a.TryWriteLine($"ADVANCE-TO {held + 1}") && b.TryWriteLine($"ADVANCE-TO {held + 1}"), replay);
            await aLines.WaitForAsync("ADVANCED", a, replay, aMark);
            await bLines.WaitForAsync("ADVANCED", b, replay, bMark);
            var tail = await SendBatchAsync(producer, killAfterBatches, waitForLast: false, guard.Token);
            speculativeTail.AddRange(tail.Select(result => result.Sequence));
            string consumed = $"STEPS {speculativeTail[^1]}";
            await bLines.WaitForAsync(consumed, b, replay, match: line => line == consumed);
            await a.KillHardAsync();
            Assert.True(b.TryWriteLine("AUTO"), replay);
        }

        output.WriteLine($"killed a after {acknowledgedBeforeKill.Count} values acknowledged through the barrier and {Batch} more appended, forwarded and consumed speculatively");

        // Second run of A on the same storage (the same port when free); the producer resends everything.
        var a2Lines = new Lines("a#2");
        await using var a2 = StartDarq("a", 1, coordinatorAddress, aPort, bPort, a2Lines);
        int a2Port = Port(await a2Lines.WaitForAsync("LISTENING", a2, replay));
        string[] ready = (await a2Lines.WaitForAsync("READY", a2, replay)).Split(' ');
        output.WriteLine($"a restarted on port {a2Port} (was {aPort}): incarnation {ready[1]}, replay of {ready[2]} messages, world-line {ready[3]}");
        var duplicates = new Dictionary<long, bool>();
        using (var channel = GrpcChannel.ForAddress($"http://127.0.0.1:{a2Port}"))
        {
            var producer = new RemoteDarqProducer(channel, "a", HostStorage.ProducerId);
            for (long batch = 0; batch < Count / Batch; batch++)
            {
                foreach (var (sequence, duplicate) in await SendBatchAsync(producer, batch, waitForLast: true, guard.Token))
                {
                    duplicates[sequence] = duplicate;
                }
            }
        }

        var survived = speculativeTail.Where(sequence => duplicates[sequence]).ToList();
        output.WriteLine($"a lost the speculative tail: {speculativeTail.Count - survived.Count} of {speculativeTail.Count} values were new again after the restart");
        Assert.True(survived.Count == 0, $"values appended in a held (never persisted) version survived the crash: {string.Join(',', survived)}; {replay}");
        var lost = acknowledgedBeforeKill.Where(sequence => !duplicates[sequence]).Order().ToList();
        Assert.True(lost.Count == 0, $"acknowledged through the barrier before the kill but not a duplicate after it: {string.Join(',', lost.Take(20))}; {replay}");

        // B's state through the barrier: it prints FINAL only once the state holding every value was committed.
        string[] final = (await bLines.WaitForAsync("FINAL", b, replay)).Split(' ');
        int rollbacks = bLines.Count("ROLLBACK");
        output.WriteLine($"b: {string.Join(' ', final)}; processor superseded by a rollback {rollbacks} time(s)");
        long sum = Count * (Count + 1) / 2;
        Assert.True(final[1..5].SequenceEqual([Count.ToString(CultureInfo.InvariantCulture), sum.ToString(CultureInfo.InvariantCulture), "0", "0"]),
            $"b's final state '{string.Join(' ', final)}', expected count {Count}, sum {sum}, 0 duplicates, 0 missing; {replay}");

        // The crash mattered: A's restart was a failure that moved the cluster to a later world-line, and B, which had
        // consumed A's lost tail, was rolled back (its processor superseded) before it counted those values again.
        Assert.True(rollbacks >= 1, $"b was never rolled back although it consumed values from a's lost version; {replay}");
        Assert.True(long.Parse(ready[3], CultureInfo.InvariantCulture) >= 1, $"a restarted on world-line {ready[3]}; {replay}");
        Assert.True(long.Parse(final[5], CultureInfo.InvariantCulture) >= 1, $"b committed its final state on world-line {final[5]}; {replay}");
        _passed = true;
    }

    public void Dispose()
    {
        if (_passed && Directory.Exists(_directory))
        {
            Directory.Delete(_directory, recursive: true);
        }
        else
        {
            output.WriteLine($"kept {_directory} (coordinator log and both DARQs)");
        }
    }

    /// <summary>
    /// Sends batch <paramref name="batch"/> (values batch*Batch+1 ..), each under its own sequence number, in order; the
    /// last one waits for the recoverable barrier when <paramref name="waitForLast"/> (a log prefix: it covers the batch).
    /// </summary>
    private static async Task<List<(long Sequence, bool Duplicate)>> SendBatchAsync(RemoteDarqProducer producer, long batch, bool waitForLast, CancellationToken cancellationToken)
    {
        var results = new List<(long, bool)>(Batch);
        for (long sequence = (batch * Batch) + 1; sequence <= (batch + 1) * Batch; sequence++)
        {
            var bytes = new byte[8];
            BinaryPrimitives.WriteInt64LittleEndian(bytes, sequence);
            bool last = sequence == (batch + 1) * Batch;
            var result = await producer.EnqueueAsync(sequence, bytes, waitDurable: waitForLast && last, cancellationToken);
            results.Add((sequence, result.IsDuplicate));
        }

        return results;
    }

    private DarqHostProcess StartDarq(string role, long id, string coordinatorAddress, int port, int? toPort, Lines lines)
    {
        var arguments = new List<string>
        {
            "--general", "--role", role, "--id", id.ToString(CultureInfo.InvariantCulture),
            "--dir", Path.Combine(_directory, role), "--coordinator", coordinatorAddress,
            "--count", Count.ToString(CultureInfo.InvariantCulture), "--port", port.ToString(CultureInfo.InvariantCulture),
        };
        if (toPort is { } to)
        {
            arguments.AddRange(["--to", $"http://127.0.0.1:{to}"]);
        }

        return DarqHostProcess.Start(arguments, lines.Add);
    }

    private static int Port(string listening) => int.Parse(listening.Split(' ')[1], CultureInfo.InvariantCulture);

    private static long Version(string line) => long.Parse(line.Split(' ')[1], CultureInfo.InvariantCulture);

    /// <summary>A process's output lines, with a bounded wait for the first one that starts with a prefix.</summary>
    private sealed class Lines(string name)
    {
        private readonly List<string> _lines = [];
        private TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void Add(string line)
        {
            TaskCompletionSource changed;
            lock (_lines)
            {
                _lines.Add(line);
                changed = _changed;
                _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
            }

            changed.TrySetResult();
        }

        /// <summary>How many lines arrived so far: a later wait from here sees only the lines after them.</summary>
        public int Mark()
        {
            lock (_lines)
            {
                return _lines.Count;
            }
        }

        public int Count(string prefix)
        {
            lock (_lines)
            {
                return _lines.Count(line => line.StartsWith(prefix, StringComparison.Ordinal));
            }
        }

        public async Task<string> WaitForAsync(string prefix, DarqHostProcess process, string replay, int from = 0, Func<string, bool>? match = null)
        {
            match ??= line => line.StartsWith(prefix, StringComparison.Ordinal);
            string? Find() => _lines.Skip(from).FirstOrDefault(match);
            using var timeout = new CancellationTokenSource();
            var deadline = Task.Delay(Timeout, timeout.Token);
            while (true)
            {
                Task changed;
                lock (_lines)
                {
                    if (Find() is { } found)
                    {
                        return found;
                    }

                    changed = _changed.Task;
                }

                var completed = await Task.WhenAny(changed, process.Completion, deadline);
                if (completed != changed)
                {
                    lock (_lines)
                    {
                        if (Find() is not null)
                        {
                            continue;
                        }

                        Assert.Fail($"{name}: no '{prefix}' line ({(completed == process.Completion ? "the process ended" : "timed out")}); {process.Describe()}\n"
                            + $"output:\n{string.Join('\n', _lines.TakeLast(20))}\n{replay}");
                    }
                }
            }
        }
    }
}
