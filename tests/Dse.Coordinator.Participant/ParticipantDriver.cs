using System.Globalization;
using System.Threading.Channels;

namespace Dse.Coordinator.Participant;

/// <summary>
/// Runs a connected participant: generates its own events, applies the messages the test routes to it, exposes what it
/// observed through barriers, and answers the test's commands. The line protocol is described on <see cref="Program"/>.
/// </summary>
/// <remarks>
/// Output goes through one channel and one writer, so that no action ever waits on a full pipe and lines never
/// interleave. Every loop that touches the StateObject reports a fault (or any unexpected exception) through
/// <see cref="Fail"/>, which ends <see cref="RunAsync"/> with <see cref="ExitFaulted"/>.
/// </remarks>
internal sealed class ParticipantDriver
{
    public const int ExitFaulted = 3;

    private readonly EventLogObject _state;
    private readonly ParticipantArguments _arguments;
    private readonly long _incarnation;
    private readonly Channel<string> _output = Channel.CreateUnbounded<string>(new UnboundedChannelOptions { SingleReader = true });

    // Quiet stops the event and expose loops; stop ends everything (stdin closed or a fault).
    private readonly CancellationTokenSource _quiet = new();
    private readonly CancellationTokenSource _stop = new();
    private readonly TaskCompletionSource<Exception> _failed = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Receives in progress; touched only by the command loop, which is one flow.
    private readonly List<Task> _receives = [];
    private Task _generate = Task.CompletedTask;
    private Task _expose = Task.CompletedTask;
    private long _sequence;

    public ParticipantDriver(EventLogObject state, ParticipantArguments arguments, long incarnation)
    {
        _state = state;
        _arguments = arguments;
        _incarnation = incarnation;
    }

    /// <summary>Runs until <paramref name="input"/> ends (returns 0) or the participant fails (returns <see cref="ExitFaulted"/>).</summary>
    public async Task<int> RunAsync(TextReader input, TextWriter output, TextWriter errors)
    {
        var writer = WriteOutputAsync(output);
        Emit(string.Create(CultureInfo.InvariantCulture, $"READY {_state.Id} {_incarnation} {_state.WorldLine} {_state.CurrentVersion}"));
        _generate = GenerateAsync();
        _expose = ExposeAsync();
        var watch = WatchAsync();
        var commands = ReadCommandsAsync(input, errors);

        int exitCode = 0;
        if (await Task.WhenAny(commands, _failed.Task) == _failed.Task)
        {
            await errors.WriteLineAsync($"FAULT participant {_state.Id}: {await _failed.Task}");
            exitCode = ExitFaulted;
        }

        await _stop.CancelAsync();
        await _quiet.CancelAsync();
        await Task.WhenAll(Observe(_generate), Observe(_expose), Observe(watch));
        _output.Writer.TryComplete();
        await writer;
        return exitCode;
    }

    private async Task ReadCommandsAsync(TextReader input, TextWriter errors)
    {
        while (await input.ReadLineAsync(_stop.Token) is { } line)
        {
            string[] parts = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
            switch (parts)
            {
                case ["RECV", var eventName, var encoded]:
                    if (TryDecode(encoded, out var header, out string error))
                    {
                        _receives.RemoveAll(r => r.IsCompleted);
                        _receives.Add(ReceiveAsync(eventName, header));
                    }
                    else
                    {
                        await errors.WriteLineAsync($"participant {_state.Id}: ignoring RECV {eventName} with a bad header: {error}");
                    }

                    break;
                case ["QUIET"]:
                    _ = QuietAsync();
                    break;
                case ["SETTLE"]:
                    _ = SettleAsync([.. _receives]);
                    break;
                case ["DUMP"]:
                    Dump();
                    break;
                default:
                    await errors.WriteLineAsync($"participant {_state.Id}: ignoring malformed line '{line}'");
                    break;
            }
        }
    }

    /// <summary>A local action per tick: a new event, sent to a random peer with the action's header.</summary>
    private async Task GenerateAsync()
    {
        var random = new Random(_arguments.Seed);
        using var timer = new PeriodicTimer(_arguments.EventInterval);
        try
        {
            while (await timer.WaitForNextTickAsync(_quiet.Token))
            {
                await _state.StartLocalActionAsync(_stop.Token);
                string eventName = string.Create(CultureInfo.InvariantCulture, $"p{_state.Id}-{_incarnation}.{++_sequence}");
                _state.Record(eventName);
                var header = _state.EndAction();
                long to = _arguments.Peers[random.Next(_arguments.Peers.Count)];
                Emit(string.Create(CultureInfo.InvariantCulture, $"SEND {to} {eventName} {Convert.ToBase64String(header.ToArray())}"));
            }
        }
        catch (OperationCanceledException) when (_quiet.IsCancellationRequested)
        {
            // QUIET or shutdown.
        }
        catch (Exception ex)
        {
            Fail(ex);
        }
    }

    /// <summary>Now and then: detach, pass a barrier, then show the outside world what the sthread observed.</summary>
    private async Task ExposeAsync()
    {
        var random = new Random(_arguments.Seed + 1);
        int period = (int)_arguments.ExposeInterval.TotalMilliseconds;
        try
        {
            while (true)
            {
                await Task.Delay(random.Next(period / 2, period * 3 / 2 + 1), _quiet.Token);
                await _state.StartLocalActionAsync(_stop.Token);
                string[] observed = _state.Events();
                var sthread = _state.Detach();
                try
                {
                    await sthread.BarrierAsync(_stop.Token);
                    Emit("EXPOSED " + string.Join(',', observed));
                }
                catch (DseRolledBackException)
                {
                    // What it observed was rolled back: nothing may be shown.
                    Emit(string.Create(CultureInfo.InvariantCulture, $"WITHHELD {observed.Length}"));
                }
            }
        }
        catch (OperationCanceledException) when (_quiet.IsCancellationRequested)
        {
            // QUIET or shutdown.
        }
        catch (Exception ex)
        {
            Fail(ex);
        }
    }

    private async Task ReceiveAsync(string eventName, DseHeader header)
    {
        try
        {
            if (await _state.StartActionAsync(header, _stop.Token))
            {
                _state.Record("recv:" + eventName);
                _state.EndAction();
            }
            else
            {
                Emit("DISCARD " + eventName);
            }
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
            // Shutdown.
        }
        catch (Exception ex)
        {
            Fail(ex);
        }
    }

    /// <summary>Stops producing; QUIETED follows every SEND line this participant will ever print.</summary>
    private async Task QuietAsync()
    {
        await _quiet.CancelAsync();
        await Task.WhenAll(_generate, _expose);
        Emit("QUIETED");
    }

    /// <summary>Once the given receives are done, waits until the whole current state is recoverable: SETTLED.</summary>
    private async Task SettleAsync(Task[] receives)
    {
        try
        {
            await Task.WhenAll(receives);
            await _state.StartLocalActionAsync(_stop.Token);
            var sthread = _state.Detach();
            await sthread.BarrierAsync(_stop.Token);
            Emit("SETTLED");
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
            // Shutdown.
        }
        catch (Exception ex)
        {
            Fail(ex);
        }
    }

    private void Dump()
    {
        // Read the versions first: the state printed is then at least as new as them.
        long committed = _state.CommittedVersion;
        long worldLine = _state.WorldLine;
        long version = _state.CurrentVersion;
        Emit("STATE " + string.Join(',', _state.Events()));
        Emit(string.Create(CultureInfo.InvariantCulture, $"COMMITTED {committed}"));
        Emit(string.Create(CultureInfo.InvariantCulture, $"WORLDLINE {worldLine}"));
        Emit(string.Create(CultureInfo.InvariantCulture, $"VERSION {version}"));
    }

    /// <summary>Prints STATUS whenever the committed version or the world-line moves (with the current version); fails the run on a fault.</summary>
    private async Task WatchAsync()
    {
        using var timer = new PeriodicTimer(TimeSpan.FromMilliseconds(50));
        long committed = -1;
        long worldLine = -1;
        try
        {
            while (await timer.WaitForNextTickAsync(_stop.Token))
            {
                if (_state.Fault is { } fault)
                {
                    Fail(fault);
                    return;
                }

                if (_state.CommittedVersion != committed || _state.WorldLine != worldLine)
                {
                    // World-line before version: the version printed is at least the one the world-line started at.
                    committed = _state.CommittedVersion;
                    worldLine = _state.WorldLine;
                    Emit(string.Create(CultureInfo.InvariantCulture, $"STATUS {committed} {worldLine} {_state.CurrentVersion}"));
                }
            }
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
            // Shutdown.
        }
    }

    private void Fail(Exception error) => _failed.TrySetResult(error);

    private void Emit(string line) => _output.Writer.TryWrite(line);

    private async Task WriteOutputAsync(TextWriter output)
    {
        var reader = _output.Reader;
        while (await reader.WaitToReadAsync())
        {
            while (reader.TryRead(out string? line))
            {
                await output.WriteLineAsync(line);
            }

            await output.FlushAsync();
        }
    }

    private static bool TryDecode(string encoded, out DseHeader header, out string error)
    {
        header = default;
        var bytes = new byte[(encoded.Length * 3 / 4) + 3];
        if (!Convert.TryFromBase64String(encoded, bytes, out int length))
        {
            error = "not base64";
            return false;
        }

        return DseHeader.TryParse(bytes.AsSpan(0, length), out header, out error);
    }

    private static async Task Observe(Task task)
    {
        try
        {
            await task;
        }
        catch (OperationCanceledException)
        {
            // Stopping.
        }
    }
}
