using System.Diagnostics;
using Dse.Testing;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>
/// A .NET program run with <c>dotnet exec</c> as a child process that talks in lines: each standard output line goes
/// to a callback (in order, one at a time) and, timestamped, to a <c>.stdout</c> file; standard input takes lines;
/// standard error goes to a file, with its tail kept for failure messages. Disposing kills the process tree if it
/// still runs, whatever happened before.
/// </summary>
public sealed class LineChildProcess : IAsyncDisposable
{
    private const int ErrorTailLines = 60;
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(60);

    private readonly Process _process;
    private readonly string _errorLogPath;
    private readonly SemaphoreSlim _input = new(1, 1);

    // The last lines of standard error; guarded by itself.
    private readonly Queue<string> _errorTail = new();
    private Task _outputPump = Task.CompletedTask;
    private Task _errorPump = Task.CompletedTask;
    private int _killed;

    private LineChildProcess(string name, Process process, string errorLogPath)
    {
        Name = name;
        _process = process;
        _errorLogPath = errorLogPath;
    }

    /// <summary>A name for messages, for example <c>coordinator#2</c>.</summary>
    public string Name { get; }

    /// <summary>Whether the test killed the process (rather than it exiting on its own).</summary>
    public bool KilledByTest => Volatile.Read(ref _killed) != 0;

    /// <summary>Whether the process has exited.</summary>
    public bool HasExited => _process.HasExited;

    /// <summary>Completes once standard output reached its end (the process exited) and every line was handled.</summary>
    public Task OutputCompleted => _outputPump;

    /// <summary>
    /// Starts <c>dotnet exec <paramref name="assemblyPath"/> <paramref name="arguments"/></c>. <paramref name="onLine"/>
    /// receives each output line; <paramref name="onExit"/> runs once output ended, after the last line. Standard error
    /// is appended to <paramref name="errorLogPath"/>.
    /// </summary>
    public static LineChildProcess Start(string name, string assemblyPath, IEnumerable<string> arguments, string errorLogPath, Func<LineChildProcess, string, Task> onLine, Action<LineChildProcess> onExit)
    {
        var start = new ProcessStartInfo(BuiltProgram.DotnetMuxer())
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add("exec");
        start.ArgumentList.Add(assemblyPath);
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        var child = new LineChildProcess(name, Process.Start(start) ?? throw new InvalidOperationException($"Could not start {name}."), errorLogPath);
        child._errorPump = child.PumpErrorsAsync();
        child._outputPump = child.PumpOutputAsync(onLine, onExit);
        return child;
    }

    /// <summary>Writes one line to standard input; false if the process is gone (the line is dropped).</summary>
    public async Task<bool> WriteLineAsync(string line)
    {
        await _input.WaitAsync();
        try
        {
            if (_process.HasExited)
            {
                return false;
            }

            await _process.StandardInput.WriteLineAsync(line);
            await _process.StandardInput.FlushAsync();
            return true;
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or InvalidOperationException)
        {
            return false;
        }
        finally
        {
            _input.Release();
        }
    }

    /// <summary>SIGKILL on Unix (TerminateProcess on Windows): no finalizers, no dispose, like a crash. Waits for the exit.</summary>
    public async Task KillHardAsync()
    {
        Volatile.Write(ref _killed, 1);
        _process.Kill(entireProcessTree: true);
        using var timeout = new CancellationTokenSource(Timeout);
        await _process.WaitForExitAsync(timeout.Token);
    }

    /// <summary>The exit code and the last lines of standard error, for failure messages.</summary>
    public string Describe()
    {
        string exit = _process.HasExited ? $"exited with {_process.ExitCode}{(KilledByTest ? " (killed by the test)" : string.Empty)}" : "running";
        lock (_errorTail)
        {
            return $"{Name} (pid {_process.Id}) {exit}; standard error in {_errorLogPath}, its last lines:\n    {string.Join("\n    ", _errorTail)}";
        }
    }

    public async ValueTask DisposeAsync()
    {
        try
        {
            if (!_process.HasExited)
            {
                Volatile.Write(ref _killed, 1);
                _process.Kill(entireProcessTree: true);
            }

            using var timeout = new CancellationTokenSource(Timeout);
            await _process.WaitForExitAsync(timeout.Token);
            await Task.WhenAll(_outputPump, _errorPump).WaitAsync(timeout.Token);
        }
        catch (Exception ex) when (ex is InvalidOperationException or OperationCanceledException or TimeoutException)
        {
            // Dispose must not throw over the test's own failure; the process is killed or was never running.
        }
        finally
        {
            _process.Dispose();
            _input.Dispose();
        }
    }

    private async Task PumpOutputAsync(Func<LineChildProcess, string, Task> onLine, Action<LineChildProcess> onExit)
    {
        try
        {
            // A timestamped copy next to standard error, for the post-mortem of a failed run.
            await using var file = new StreamWriter(Path.ChangeExtension(_errorLogPath, ".stdout"), append: true);
            while (await _process.StandardOutput.ReadLineAsync() is { } line)
            {
                await file.WriteLineAsync($"{DateTime.UtcNow:HH:mm:ss.fff} {line}");
                await onLine(this, line);
            }
        }
        finally
        {
            onExit(this);
        }
    }

    private async Task PumpErrorsAsync()
    {
        // Always drained: a child blocked on a full standard error pipe would stall.
        await using var file = new StreamWriter(_errorLogPath, append: true);
        while (await _process.StandardError.ReadLineAsync() is { } line)
        {
            await file.WriteLineAsync(line);
            lock (_errorTail)
            {
                _errorTail.Enqueue(line);
                if (_errorTail.Count > ErrorTailLines)
                {
                    _errorTail.Dequeue();
                }
            }
        }
    }
}
