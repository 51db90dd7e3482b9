using System.Globalization;
using System.Text;
using Dse.Coordinator.Client;
using Dse.Storage;
using Microsoft.Extensions.Logging;

namespace Dse.Coordinator.Participant;

/// <summary>
/// One participant of the coordinator's multi-process crash tests: a <see cref="SnapshotStateObject"/> whose state is
/// the list of events it applied, persisted in <c>DIR/state.log</c>, connected to a coordinator host over gRPC. The
/// test starts it, routes its messages to the other participants, and kills it with SIGKILL; a restart with the same
/// id and directory recovers from the log.
/// </summary>
/// <remarks>
/// <para>Arguments: <c>--id N --coordinator URL --dir DIR --peers 1,2,3</c>, optionally <c>--seed N</c>,
/// <c>--interval-ms</c> (event pace, 10), <c>--group-commit-ms</c> (20), <c>--expose-ms</c> (mean expose period, 250).</para>
/// <para>Standard output, one line per message, flushed:</para>
/// <list type="bullet">
/// <item><c>READY id incarnation world-line version</c> once connected (the incarnation counts the starts on this directory);</item>
/// <item><c>SEND to event header</c> for each own event <c>p{id}-{incarnation}.{n}</c>, made in a local action
/// every interval; header is the action's DSE header in base64;</item>
/// <item><c>DISCARD event</c> when a routed message came from lost state;</item>
/// <item><c>EXPOSED e1,e2,...</c>: the state when an sthread was detached, printed once its barrier passed (what an
/// outside observer saw, which must never be lost); <c>WITHHELD n</c> when that barrier threw instead;</item>
/// <item><c>STATUS committed world-line version</c> whenever the committed version or the world-line moves;</item>
/// <item><c>QUIETED</c>, <c>SETTLED</c>, and <c>STATE e1,...</c> <c>COMMITTED v</c> <c>WORLDLINE n</c> <c>VERSION v</c>
/// in answer to the commands below.</item>
/// </list>
/// <para>Standard input: <c>RECV event header</c> starts an action with the header and records <c>recv:event</c> if
/// accepted; <c>QUIET</c> stops events and exposes; <c>SETTLE</c> waits for the receives so far, then until the whole
/// state is recoverable; <c>DUMP</c> prints the state. Malformed lines are ignored with a note on standard error, where
/// the runtime's log goes too. The process ends when standard input closes (exit 0) or the StateObject faults (exit 3).</para>
/// </remarks>
internal static class Program
{
    public const int ExitUsage = 2;

    public static async Task<int> Main(string[] args)
    {
        var errors = Console.Error;
        if (!ParticipantArguments.TryParse(args, out var arguments, out string error))
        {
            await errors.WriteLineAsync($"{error}\n{ParticipantArguments.Usage}");
            return ExitUsage;
        }

        using var loggerFactory = LoggerFactory.Create(logging => logging
            .SetMinimumLevel(LogLevel.Information)
            .AddConsole(console => console.LogToStandardErrorThreshold = LogLevel.Trace)
            .AddSimpleConsole(console =>
            {
                console.SingleLine = true;
                console.TimestampFormat = "HH:mm:ss.fff ";
            })
            .AddFilter("Microsoft", LogLevel.Warning)
            .AddFilter("Grpc", LogLevel.Warning));

        Directory.CreateDirectory(arguments!.Directory);
        long incarnation = await NextIncarnationAsync(arguments.Directory);

        // Buffered writes: a kill -9 loses the process, not the page cache, which is the crash this program models.
        var device = DseDevices.CreateLocalFile(Path.Combine(arguments.Directory, "state.log"), new LocalFileDeviceOptions { DisableFileBuffering = false });
        await using var log = await SnapshotLog.OpenAsync(device, new SnapshotLogOptions { OwnsDevice = true }, loggerFactory.CreateLogger<SnapshotLog>());
        await using var coordinator = new GrpcCoordinatorClient(arguments.Coordinator);
        await using var state = new EventLogObject(
            new DseOptions
            {
                ObjectId = arguments.Id,
                GroupCommitPeriod = arguments.GroupCommitPeriod,
                HeartbeatPeriod = TimeSpan.FromMilliseconds(500),
                LoggerFactory = loggerFactory,
            },
            log);

        await ConnectAsync(state, coordinator, errors);

        var input = new StreamReader(Console.OpenStandardInput(), Encoding.UTF8);
        await using var output = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(encoderShouldEmitUTF8Identifier: false));
        return await new ParticipantDriver(state, arguments, incarnation).RunAsync(input, output, errors);
    }

    /// <summary>Connects, retrying while the coordinator host is unreachable (it may be restarting).</summary>
    private static async Task ConnectAsync(EventLogObject state, GrpcCoordinatorClient coordinator, TextWriter errors)
    {
        while (true)
        {
            try
            {
                await state.ConnectAsync(coordinator);
                return;
            }
            catch (DseCoordinatorException ex) when (ex.Code == CoordinatorErrorCode.Unavailable)
            {
                await errors.WriteLineAsync($"participant {state.Id}: coordinator unavailable at connect, retrying: {ex.Message}");
                await Task.Delay(TimeSpan.FromMilliseconds(100));
            }
        }
    }

    /// <summary>Counts the starts on this directory, so event names stay unique across incarnations.</summary>
    private static async Task<long> NextIncarnationAsync(string directory)
    {
        string path = Path.Combine(directory, "incarnation");
        long previous = File.Exists(path) ? long.Parse(await File.ReadAllTextAsync(path), CultureInfo.InvariantCulture) : 0;
        long next = previous + 1;
        // Write aside, then rename: a kill in the middle leaves the old count, never a torn file.
        await File.WriteAllTextAsync(path + ".tmp", next.ToString(CultureInfo.InvariantCulture));
        File.Move(path + ".tmp", path, overwrite: true);
        return next;
    }
}
