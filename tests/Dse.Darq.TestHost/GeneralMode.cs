using System.Buffers.Binary;
using System.Globalization;
using System.Text;
using System.Threading.Channels;
using Dse.Coordinator.Client;
using Dse.Darq.Grpc;
using Dse.Testing;
using Grpc.Net.Client;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Console;

namespace Dse.Darq.TestHost;

/// <summary>
/// The host's <c>--general</c> mode: one DARQ under general speculation (a LibDse StateObject of a coordinator host
/// reached with <see cref="GrpcCoordinatorClient"/>), served over gRPC on 127.0.0.1, with a co-located processor.
/// </summary>
/// <remarks>
/// <para>Arguments: <c>--general --role a|b --id ID (--dir DIR | --connection CS --container NAME) --coordinator URI
/// --count N [--port P] [--to URI]</c>: the DARQ on local files in DIR or on page blobs in container NAME (see
/// <see cref="HostStorage"/>; one directory or container per DARQ).
/// Role <c>a</c> (DARQ name <c>a</c>) forwards each IN message's payload to DARQ <c>b</c> at <c>--to</c>, delivered
/// speculatively (OUT leaves before commit, with the step's DSE header). Role <c>b</c> (DARQ name <c>b</c>) keeps a
/// running sum (<see cref="SumState"/>, values 1..N) in SELF.</para>
/// <para>Lines: <c>LISTENING port</c> (the port actually bound: <c>--port</c> when free, else a free one);
/// <c>READY incarnation replay worldline</c> after each processor registration; <c>ROLLBACK worldline</c> when a
/// restore superseded the processor (it registers again and resumes from the restored state); role b prints
/// <c>FINAL count sum duplicates missing worldline</c> once the state holds N values and that state passed the
/// recoverable barrier (the coordinator committed it: no rollback can undo it); role b prints <c>STEPS count</c> after
/// each step (speculative: a rollback can undo it). The program runs until standard input closes or it is killed.</para>
/// <para>Versions advance every 20 ms (a group commit driven by the host, which lets at most 16 of its versions stand
/// outside the recoverable boundary: slower storage, page blobs under load, slows it down instead of filling the DARQ's
/// speculation section) until standard input says <c>MANUAL</c>
/// (answered by <c>MANUAL version</c> once no advance is under way); then only <c>ADVANCE-TO version</c> (answered
/// by <c>ADVANCED version</c>) or commit ordering moves them, and <c>AUTO</c> resumes. Holding versions lets the test
/// make a crash lose a known speculative tail.</para>
/// </remarks>
internal static class GeneralMode
{
    public const string Usage = "usage: Dse.Darq.TestHost --general --role a|b --id ID (--dir DIR | --connection CS --container NAME) --coordinator URI --count N [--port P] [--to URI]";

    public static async Task<int> RunAsync(IReadOnlyDictionary<string, string> arguments, long count, TextWriter errors)
    {
        if (!arguments.TryGetValue("role", out string? role) || role is not ("a" or "b")
            || !arguments.TryGetValue("id", out string? idText) || !long.TryParse(idText, CultureInfo.InvariantCulture, out long id) || id < 0
            || !arguments.TryGetValue("coordinator", out string? coordinatorText) || !Uri.TryCreate(coordinatorText, UriKind.Absolute, out var coordinatorAddress)
            || (arguments.TryGetValue("port", out string? portText) ? !int.TryParse(portText, CultureInfo.InvariantCulture, out int port) || port is < 0 or > 65535 : (port = 0) != 0))
        {
            await errors.WriteLineAsync($"--general needs --role a|b, --id (non-negative), --coordinator (an absolute URI) and a valid --port if given\n{Usage}");
            return 2;
        }

        // Local files or page blobs, never both: a DARQ's storage must be unambiguous.
        arguments.TryGetValue("dir", out string? directory);
        arguments.TryGetValue("connection", out string? connection);
        arguments.TryGetValue("container", out string? container);
        if (directory is null ? connection is null || container is null : connection is not null || container is not null)
        {
            await errors.WriteLineAsync($"--general needs either --dir, or --connection and --container (not both)\n{Usage}");
            return 2;
        }

        Uri? to = null;
        if (role == "a" && (!arguments.TryGetValue("to", out string? toText) || !Uri.TryCreate(toText, UriKind.Absolute, out to)))
        {
            await errors.WriteLineAsync($"--role a needs --to (the absolute URI of b's DarqService)\n{Usage}");
            return 2;
        }

        await using var output = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(encoderShouldEmitUTF8Identifier: false)) { AutoFlush = true };

        // Warnings and errors (a failed persist, a device request that failed) go to standard error: a failing test shows it.
        using var loggerFactory = LoggerFactory.Create(logging => logging
            .SetMinimumLevel(LogLevel.Warning)
            .AddSimpleConsole(console => console.SingleLine = true)
            .AddFilter("Microsoft", LogLevel.None)
            .Services.Configure<ConsoleLoggerOptions>(console => console.LogToStandardErrorThreshold = LogLevel.Trace));
        await using var coordinator = new GrpcCoordinatorClient(coordinatorAddress);
        using var toB = to is null ? null : GrpcChannel.ForAddress(to);
        using var destinations = toB is null ? null : new GrpcDarqDestinations().Add("b", new GrpcDarqDestination(toB) { ReceivesSpeculatively = true });
        var options = directory is not null
            ? HostStorage.LocalFiles(directory)
            : HostStorage.PageBlobs(connection!, container!, loggerFactory.CreateLogger("Dse.Darq.TestHost.PageBlobs"));
        options.Name = role;
        options.Speculation = DarqSpeculationMode.General;
        options.Coordinator = coordinator;
        options.Destinations = destinations;
        options.DeliveryRetryMinDelay = TimeSpan.FromMilliseconds(1);
        options.DeliveryRetryMaxDelay = TimeSpan.FromMilliseconds(50);
        options.Dse = new DseOptions
        {
            ObjectId = id,
            RunBackgroundTasks = true,
            LoggerFactory = loggerFactory,

            // Versions advance only by the VersionDriver (every 20 ms unless the test holds them).
            GroupCommitPeriod = TimeSpan.FromMinutes(10),
            HeartbeatPeriod = TimeSpan.FromMilliseconds(500),
        };

        await using var darq = await Darq.OpenAsync(options, loggerFactory);
        var registry = new DarqRegistry();
        registry.Add(darq);
        await using var app = await StartServerAsync(registry, port);
        Write(output, string.Create(CultureInfo.InvariantCulture, $"LISTENING {app.Port}"));

        using var stop = new CancellationTokenSource();
        var processing = ProcessAsync(darq, role, count, output, stop.Token);
        var versions = new VersionDriver(darq, errors);
        versions.Automatic();

        // Commands until standard input closes (or the kill).
        while (await Console.In.ReadLineAsync() is { } command)
        {
            string[] parts = command.Split(' ');
            if (parts is ["MANUAL"])
            {
                await versions.ManualAsync();
                Write(output, string.Create(CultureInfo.InvariantCulture, $"MANUAL {darq.DseStateObject!.CurrentVersion}"));
            }
            else if (parts is ["AUTO"])
            {
                versions.Automatic();
            }
            else if (parts is ["ADVANCE-TO", var target] && long.TryParse(target, CultureInfo.InvariantCulture, out long version))
            {
                await darq.DseStateObject!.AdvanceVersionToAsync(version, stop.Token);
                Write(output, string.Create(CultureInfo.InvariantCulture, $"ADVANCED {darq.DseStateObject.CurrentVersion}"));
            }
            else
            {
                await errors.WriteLineAsync($"unknown command '{command}' (MANUAL, AUTO or ADVANCE-TO VERSION)");
            }
        }

        await versions.ManualAsync();
        await stop.CancelAsync();
        try
        {
            await processing;
        }
        catch (OperationCanceledException)
        {
            // Stopped.
        }

        return 0;
    }

    /// <summary>
    /// Advances the StateObject's version every <see cref="Period"/> while automatic (the group commit, driven here so that
    /// the test can stop it: with versions held, a crash loses everything since the last one). The DARQ's backpressure
    /// holds its actions back while the coordinator lags (a storage slower than the period: page blobs on a loaded
    /// machine), but an explicit advance persists a version even when nothing changed, so the driver waits for the DARQ's
    /// room before each advance, as <see cref="Darq.WaitForSpeculationRoomAsync"/> says.
    /// </summary>
    private sealed class VersionDriver(Darq darq, TextWriter errors)
    {
        private static readonly TimeSpan Period = TimeSpan.FromMilliseconds(20);

        private readonly StateObject _state = darq.DseStateObject!;
        private CancellationTokenSource? _stop;
        private Task _loop = Task.CompletedTask;

        public void Automatic()
        {
            if (_stop is not null)
            {
                return;
            }

            _stop = new CancellationTokenSource();
            _loop = LoopAsync(_stop.Token);
        }

        /// <summary>Stops advancing; returns once no advance is under way.</summary>
        public async Task ManualAsync()
        {
            if (_stop is null)
            {
                return;
            }

            await _stop.CancelAsync();
            await _loop;
            _stop.Dispose();
            _stop = null;
        }

        private async Task LoopAsync(CancellationToken cancellationToken)
        {
            while (!cancellationToken.IsCancellationRequested)
            {
                try
                {
                    await Task.Delay(Period, cancellationToken);

                    // Deadlock-free: a hold needs an uncommitted version of this DARQ. The lowest uncommitted version in the
                    // cluster depends only on versions at or below its number (commit ordering); an owner still at such a
                    // version could be held only by an uncommitted version below it, lower than the lowest: so it is not
                    // held, and advances.
                    await darq.WaitForSpeculationRoomAsync(cancellationToken);
                    await _state.AdvanceVersionAsync(CancellationToken.None);
                }
                catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
                {
                    return;
                }
                catch (Exception e) when (e is not OutOfMemoryException)
                {
                    // A restore under way, or the coordinator unreachable for a moment: the next period tries again.
                    await errors.WriteLineAsync($"advance failed: {e.Message}");
                }
            }
        }
    }

    /// <summary>Runs the processor; a restore that supersedes it registers a new one, which resumes from the restored state.</summary>
    private static async Task ProcessAsync(Darq darq, string role, long count, StreamWriter output, CancellationToken cancellationToken)
    {
        bool reported = false;
        while (true)
        {
            var processor = await darq.RegisterProcessorAsync(cancellationToken);
            Write(output, string.Create(CultureInfo.InvariantCulture,
                $"READY {processor.Incarnation} {processor.ReplayCount} {darq.DseStateObject!.WorldLine}"));
            try
            {
                if (role == "a")
                {
                    await ForwardAsync(processor, cancellationToken);
                }
                else
                {
                    reported = await SumAsync(darq, processor, count, reported, output, cancellationToken);
                }

                return;
            }
            catch (Exception e) when (IsRollback(e))
            {
                Write(output, string.Create(CultureInfo.InvariantCulture, $"ROLLBACK {darq.DseStateObject.WorldLine}"));
            }
        }
    }

    private static bool IsRollback(Exception e) => e switch
    {
        DarqStaleIncarnationException or DseRolledBackException => true,
        ChannelClosedException { InnerException: { } inner } => IsRollback(inner),
        _ => false,
    };

    /// <summary>Role a: each IN message goes on to b in one step that consumes it.</summary>
    private static async Task ForwardAsync(DarqProcessor processor, CancellationToken cancellationToken)
    {
        await foreach (var message in processor.ReadAllAsync(cancellationToken))
        {
            if (message.Kind == DarqMessageKind.In)
            {
                await processor.StepAsync(new DarqStep().Consume(message).AddOut("b", message.Payload), cancellationToken);
            }
        }
    }

    /// <summary>Role b: the running sum; returns whether FINAL was printed.</summary>
    private static async Task<bool> SumAsync(Darq darq, DarqProcessor processor, long count, bool reported, StreamWriter output, CancellationToken cancellationToken)
    {
        var state = new SumState(count);
        long stateLsn = -1;
        await foreach (var message in processor.ReadAllAsync(cancellationToken))
        {
            if (message.Kind == DarqMessageKind.Self)
            {
                state = SumState.Decode(message.Payload.Span);
                stateLsn = message.Lsn;
                continue;
            }

            var step = new DarqStep().Consume(message);
            if (stateLsn >= 0)
            {
                step.Consume(stateLsn);
            }

            state.Apply(BinaryPrimitives.ReadInt64LittleEndian(message.Payload.Span));
            var result = await processor.StepAsync(step.AddSelf(state.Encode()), cancellationToken);
            stateLsn = result.SelfLsns[0];
            Write(output, string.Create(CultureInfo.InvariantCulture, $"STEPS {state.Count}"));
            if (!reported && state.Count >= count)
            {
                // Only a state the coordinator committed is reported: nothing can roll it back any more.
                await darq.WaitForRecoverableAsync(result.DurableAt - 1, cancellationToken);
                Write(output, string.Create(CultureInfo.InvariantCulture,
                    $"FINAL {state.Count} {state.Sum} {state.Duplicates} {state.Missing} {darq.DseStateObject!.WorldLine}"));
                reported = true;
            }
        }

        return reported;
    }

    private static void Write(StreamWriter output, string line)
    {
        lock (output)
        {
            output.WriteLine(line);
        }
    }

    /// <summary>The DarqService on 127.0.0.1:<paramref name="port"/>, or on a free port when that one is taken.</summary>
    private static async Task<LoopbackGrpcServer> StartServerAsync(DarqRegistry registry, int port)
    {
        try
        {
            return await StartServerOnAsync(registry, port);
        }
        catch (IOException) when (port != 0)
        {
            return await StartServerOnAsync(registry, 0);
        }
    }

    private static Task<LoopbackGrpcServer> StartServerOnAsync(DarqRegistry registry, int port) =>
        LoopbackGrpcServer.StartAsync(app => app.MapDarqService(), services => services.AddSingleton<IDarqResolver>(registry), port);
}
