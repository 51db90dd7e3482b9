using System.Buffers.Binary;
using System.Globalization;
using System.Text;

namespace Dse.Darq.TestHost;

/// <summary>
/// The DARQ multi-process crash tests' child: one DARQ on local files or Azure page blobs, with a deduplicated producer
/// and a co-located running-sum processor. The test kills it with SIGKILL mid-run and starts it again on the same storage.
/// </summary>
/// <remarks>
/// <para>Arguments: <c>--count N</c> and either <c>--dir DIR</c> (local files) or <c>--connection CS --container NAME</c>
/// (page blobs); optionally <c>--from S</c> (first sequence number to send, default 1) and <c>--finish</c>.</para>
/// <para>The producer (id <see cref="HostStorage.ProducerId"/>) enqueues the values S..N, each under its own sequence
/// number, in batches of <see cref="Batch"/>, and prints <c>ACK seq dup</c> (dup 0 or 1) once each is durable. The
/// processor consumes each IN message together with its previous SELF state in one step and leaves the new state as a
/// SELF message (<see cref="SumState"/>). With <c>--finish</c> the producer then sends an end marker (sequence N+1,
/// value 0); the processor's step on it prints <c>FINAL count sum duplicates missing</c> once durable and the program
/// exits 0 (<c>ENDED-BEFORE</c> when a run on this storage already finished). Without it the program waits for standard input to close (or for the kill).</para>
/// <para>With <c>--general</c> the host runs one DARQ of a two-DARQ general-speculation pipeline instead (see
/// <see cref="GeneralMode"/>).</para>
/// <para>Other lines: <c>READY incarnation replay</c> after registration; <c>STEPS count</c> every 100 steps.
/// Errors go to standard error, with exit code 3; bad arguments exit 2.</para>
/// </remarks>
internal static class Program
{
    private const int Batch = 32;
    private const int ExitUsage = 2;
    private const int ExitFailed = 3;
    private const string Usage = "usage: Dse.Darq.TestHost --count N (--dir DIR | --connection CS --container NAME) [--from S] [--finish] [--paced]\n   or: " + GeneralMode.Usage;

    public static async Task<int> Main(string[] args)
    {
        var arguments = new Dictionary<string, string>(StringComparer.Ordinal);
        for (int i = 0; i < args.Length; i++)
        {
            if (args[i] is "--finish" or "--paced" or "--general")
            {
                arguments[args[i][2..]] = "1";
            }
            else if (args[i].StartsWith("--", StringComparison.Ordinal) && i + 1 < args.Length)
            {
                arguments[args[i][2..]] = args[++i];
            }
            else
            {
                await Console.Error.WriteLineAsync($"unexpected argument '{args[i]}'\n{Usage}");
                return ExitUsage;
            }
        }

        if (!arguments.TryGetValue("count", out string? countText) || !long.TryParse(countText, CultureInfo.InvariantCulture, out long count) || count < 1
            || (arguments.TryGetValue("from", out string? fromText) ? !long.TryParse(fromText, CultureInfo.InvariantCulture, out long from) || from < 1 : (from = 1) != 1))
        {
            await Console.Error.WriteLineAsync($"--count must be a positive number and --from (if given) too\n{Usage}");
            return ExitUsage;
        }

        if (arguments.ContainsKey("general"))
        {
            return await GeneralMode.RunAsync(arguments, count, Console.Error);
        }

        DarqOptions options;
        if (arguments.TryGetValue("dir", out string? directory))
        {
            options = HostStorage.LocalFiles(directory);
        }
        else if (arguments.TryGetValue("connection", out string? connection) && arguments.TryGetValue("container", out string? container))
        {
            options = HostStorage.PageBlobs(connection, container);
        }
        else
        {
            await Console.Error.WriteLineAsync($"give --dir, or --connection and --container\n{Usage}");
            return ExitUsage;
        }

        await using var output = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(encoderShouldEmitUTF8Identifier: false)) { AutoFlush = true };
        try
        {
            await using var darq = await Darq.OpenAsync(options);
            var processor = await darq.RegisterProcessorAsync();
            Write(output, $"READY {processor.Incarnation} {processor.ReplayCount}");
            var processing = ProcessAsync(darq, processor, count, output);
            using var credits = new SemaphoreSlim(0);
            Task? granting = null;
            if (arguments.ContainsKey("paced"))
            {
                // Console.In reads block their thread: the reader gets one of its own.
                granting = Task.Run(() => GrantCreditsAsync(credits));
            }

            await ProduceAsync(darq, from, count, granting is null ? null : credits, output);
            if (arguments.ContainsKey("finish"))
            {
                var end = await darq.EnqueueAsync(HostStorage.ProducerId, count + 1, Value(0));
                await darq.WaitForCommitAsync(end.DurableAt);
                if (end.IsDuplicate)
                {
                    // A finished run on this storage already consumed the end marker: there is no FINAL to wait for.
                    Write(output, "ENDED-BEFORE");
                    return 0;
                }

                await processing;
                return 0;
            }

            // Killed here by the test (or stopped by closing standard input).
            if (granting is not null)
            {
                await granting;
            }
            else
            {
                while (await Console.In.ReadLineAsync() is not null)
                {
                }
            }

            return 0;
        }
        catch (Exception e) when (e is not OutOfMemoryException)
        {
            await Console.Error.WriteLineAsync($"host failed: {e}");
            return ExitFailed;
        }
    }

    private static ReadOnlyMemory<byte> Value(long value)
    {
        var bytes = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, value);
        return bytes;
    }

    /// <summary>Writes lines under a lock, so that producer and processor lines never interleave.</summary>
    private static void Write(StreamWriter output, string lines)
    {
        lock (output)
        {
            output.WriteLine(lines);
        }
    }

    /// <summary>Each standard input line grants one batch; the end of input grants the rest.</summary>
    private static async Task GrantCreditsAsync(SemaphoreSlim credits)
    {
        while (await Console.In.ReadLineAsync() is not null)
        {
            credits.Release();
        }

        credits.Release(int.MaxValue / 2);
    }

    private static async Task ProduceAsync(Darq darq, long from, long count, SemaphoreSlim? credits, StreamWriter output)
    {
        var results = new List<(long Sequence, DarqEnqueueResult Result)>(Batch);
        for (long first = from; first <= count; first += Batch)
        {
            if (credits is not null)
            {
                await credits.WaitAsync();
            }

            results.Clear();
            for (long sequence = first; sequence < first + Batch && sequence <= count; sequence++)
            {
                results.Add((sequence, await darq.EnqueueAsync(HostStorage.ProducerId, sequence, Value(sequence))));
            }

            long durableAt = 0;
            foreach (var (_, result) in results)
            {
                durableAt = Math.Max(durableAt, result.DurableAt);
            }

            await darq.WaitForCommitAsync(durableAt);
            var acks = new StringBuilder();
            foreach (var (sequence, result) in results)
            {
                acks.Append(CultureInfo.InvariantCulture, $"ACK {sequence} {(result.IsDuplicate ? 1 : 0)}\n");
            }

            Write(output, acks.ToString().TrimEnd('\n'));
        }
    }

    private static async Task ProcessAsync(Darq darq, DarqProcessor processor, long count, StreamWriter output)
    {
        var state = new SumState(count);
        long stateLsn = -1;
        long steps = 0;
        await foreach (var message in processor.ReadAllAsync())
        {
            if (message.Kind == DarqMessageKind.Self)
            {
                // Replay brings the one unconsumed SELF message (the latest state) before any IN message.
                state = SumState.Decode(message.Payload.Span);
                stateLsn = message.Lsn;
                continue;
            }

            long value = BinaryPrimitives.ReadInt64LittleEndian(message.Payload.Span);
            var step = new DarqStep().Consume(message);
            if (stateLsn >= 0)
            {
                step.Consume(stateLsn);
            }

            if (value != 0)
            {
                state.Apply(value);
            }

            var result = await processor.StepAsync(step.AddSelf(state.Encode()));
            stateLsn = result.SelfLsns[0];
            if (value == 0)
            {
                await darq.WaitForCommitAsync(result.DurableAt);
                Write(output, string.Create(CultureInfo.InvariantCulture,
                    $"FINAL {state.Count} {state.Sum} {state.Duplicates} {state.Missing}"));
                return;
            }

            if (++steps % 8 == 0)
            {
                // Every 8th step waits until it is durable: the processor falls behind the producer, so a kill usually
                // leaves IN messages for the next process's replay.
                await darq.WaitForCommitAsync(result.DurableAt);
            }

            if (steps % 100 == 0)
            {
                Write(output, string.Create(CultureInfo.InvariantCulture, $"STEPS {state.Count}"));
            }
        }
    }
}
