using System.Buffers.Binary;
using System.Globalization;
using Dse.Darq.Grpc;
using Dse.Darq.TestHost;
using Dse.Testing;
using Grpc.Net.Client;
using Xunit.Abstractions;

namespace Dse.Darq.Tests;

/// <summary>
/// General speculation across OS processes with kill -9, on any storage: a coordinator host process, DARQ <c>a</c> in one
/// test-host process and DARQ <c>b</c> in another (<c>Dse.Darq.TestHost --general</c>), each a LibDse StateObject
/// connected with <c>GrpcCoordinatorClient</c> and served over gRPC. A's processor forwards each input to B, delivered
/// speculatively (before A commits, with the DSE header); B's processor keeps a running sum in SELF. This process
/// produces <c>count</c> values into A with a <see cref="RemoteDarqProducer"/>, in batches whose last enqueue waits for the
/// recoverable barrier. After a seeded number of batches it holds both DARQs' versions (the hosts' group commit stops;
/// both are levelled to one version above either, so commit ordering moves neither), appends one more batch without
/// waiting, waits until B consumed it (speculatively), kills A's process with SIGKILL, restarts it on the same storage
/// (same port when free) and resends every value. Checks: every value acknowledged through the barrier before the kill
/// is a duplicate after it; the held batch was lost by A (new again after the restart) and B, which had consumed it, was
/// rolled back (its processor superseded): the crash mattered, deterministically; B's state, read only through the
/// recoverable barrier (B prints it once the coordinator committed it), holds every value exactly once; the cluster
/// moved to a later world-line. The seed fixes the kill point; it is printed with the command that replays it.
/// </summary>
internal static class DarqSpeculativeKillRestart
{
    private const int Batch = 20;
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(60);
    private const string CoordinatorAnnouncement = "DSE coordinator listening on ";

    /// <summary>Runs the scenario once; returns normally only when every check passed.</summary>
    /// <param name="output">The test's output.</param>
    /// <param name="testName">The test method's name, for the replay command.</param>
    /// <param name="count">The number of values (a multiple of the batch, 20).</param>
    /// <param name="coordinatorLog">The coordinator host's log arguments (<c>--log ...</c> and what it needs).</param>
    /// <param name="darqStorage">A role's (<c>a</c> or <c>b</c>) storage arguments for the test host, the same at every start.</param>
    public static async Task RunAsync(ITestOutputHelper output, string testName, long count, IReadOnlyList<string> coordinatorLog,
        Func<string, IReadOnlyList<string>> darqStorage)
    {
        Assert.True(count % Batch == 0 && count >= 5 * Batch, $"count {count} must be a multiple of {Batch}, at least {5 * Batch}");
        int seed = DarqSeed.Pick(output, testName);
        string replay = DarqSeed.Replay(seed, testName);
        long killAfterBatches = new Random(seed).NextInt64(count / Batch / 5, (count / Batch * 3 / 5) + 1);

        // Every process started, so that a failure can show what each wrote to standard error.
        var started = new List<(string Name, DarqHostProcess Process)>();
        try
        {
            await RunCoreAsync(output, count, coordinatorLog, darqStorage, replay, killAfterBatches, started);
        }
        catch
        {
            // The processes are gone by now (disposing kills them), so their standard error is complete.
            foreach (var (name, process) in started)
            {
                var errors = process.Errors;
                await Task.WhenAny(errors, Task.Delay(Timeout));
                string text = errors.IsCompletedSuccessfully ? errors.Result : "(not drained)";
                output.WriteLine($"{name}: standard error (last 4000 characters):\n{text[Math.Max(0, text.Length - 4000)..]}");
            }

            throw;
        }
    }

    private static async Task RunCoreAsync(ITestOutputHelper output, long count, IReadOnlyList<string> coordinatorLog,
        Func<string, IReadOnlyList<string>> darqStorage, string replay, long killAfterBatches, List<(string Name, DarqHostProcess Process)> started)
    {
        using var guard = new CancellationTokenSource(TimeSpan.FromMinutes(3));
        var coordinatorLines = new Lines("coordinator");
        await using var coordinator = DarqHostProcess.StartProgram(
            BuiltProgram.Locate("src/Coordinator/Dse.Coordinator.Host", "Dse.Coordinator.Host.dll"),
            ["--port", "0", .. coordinatorLog, "--heartbeat-timeout", "60s"],
            coordinatorLines.Add);
        started.Add(("coordinator", coordinator));
        string announced = await coordinatorLines.WaitForAsync(CoordinatorAnnouncement, coordinator, replay);
        string coordinatorAddress = announced[CoordinatorAnnouncement.Length..].Trim();

        DarqHostProcess StartDarq(string role, long id, int port, int? toPort, Lines lines)
        {
            var arguments = new List<string>
            {
                "--general", "--role", role, "--id", id.ToString(CultureInfo.InvariantCulture), "--coordinator", coordinatorAddress,
                "--count", count.ToString(CultureInfo.InvariantCulture), "--port", port.ToString(CultureInfo.InvariantCulture),
            };
            arguments.AddRange(darqStorage(role));
            if (toPort is { } to)
            {
                arguments.AddRange(["--to", $"http://127.0.0.1:{to}"]);
            }

            var process = DarqHostProcess.Start(arguments, lines.Add);
            started.Add((lines.Name, process));
            return process;
        }

        // B first: A delivers to it.
        var bLines = new Lines("b");
        await using var b = StartDarq("b", 2, 0, null, bLines);
        int bPort = Port(await bLines.WaitForAsync("LISTENING", b, replay));
        await bLines.WaitForAsync("READY", b, replay);

        // First run of A: killed right after appending the batch that follows the kill point, without waiting for it.
        var aLines = new Lines("a#1");
        var acknowledgedBeforeKill = new HashSet<long>();
        var speculativeTail = new List<long>();
        int aPort;
        await using (var a = StartDarq("a", 1, 0, bPort, aLines))
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
        await using var a2 = StartDarq("a", 1, aPort, bPort, a2Lines);
        int a2Port = Port(await a2Lines.WaitForAsync("LISTENING", a2, replay));
        string[] ready = (await a2Lines.WaitForAsync("READY", a2, replay)).Split(' ');
        output.WriteLine($"a restarted on port {a2Port} (was {aPort}): incarnation {ready[1]}, replay of {ready[2]} messages, world-line {ready[3]}");
        var duplicates = new Dictionary<long, bool>();
        using (var channel = GrpcChannel.ForAddress($"http://127.0.0.1:{a2Port}"))
        {
            var producer = new RemoteDarqProducer(channel, "a", HostStorage.ProducerId);
            for (long batch = 0; batch < count / Batch; batch++)
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
        long sum = count * (count + 1) / 2;
        Assert.True(final[1..5].SequenceEqual([count.ToString(CultureInfo.InvariantCulture), sum.ToString(CultureInfo.InvariantCulture), "0", "0"]),
            $"b's final state '{string.Join(' ', final)}', expected count {count}, sum {sum}, 0 duplicates, 0 missing; {replay}");

        // The crash mattered: A's restart was a failure that moved the cluster to a later world-line, and B, which had
        // consumed A's lost tail, was rolled back (its processor superseded) before it counted those values again.
        Assert.True(rollbacks >= 1, $"b was never rolled back although it consumed values from a's lost version; {replay}");
        Assert.True(long.Parse(ready[3], CultureInfo.InvariantCulture) >= 1, $"a restarted on world-line {ready[3]}; {replay}");
        Assert.True(long.Parse(final[5], CultureInfo.InvariantCulture) >= 1, $"b committed its final state on world-line {final[5]}; {replay}");
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

    private static int Port(string listening) => int.Parse(listening.Split(' ')[1], CultureInfo.InvariantCulture);

    private static long Version(string line) => long.Parse(line.Split(' ')[1], CultureInfo.InvariantCulture);

    /// <summary>A process's output lines, with a bounded wait for the first one that starts with a prefix.</summary>
    private sealed class Lines(string name)
    {
        public string Name => name;

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
