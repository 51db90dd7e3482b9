using System.Diagnostics;
using System.Text;

namespace Dse.Testing;

/// <summary>
/// A built program of this repository (see <see cref="BuiltProgram.Locate"/>) running as a child process for as long as
/// a test needs it: its standard output lines are kept and can be awaited, its standard input stays open until
/// <see cref="CloseInputAsync"/>, and <see cref="KillHardAsync"/> ends it as a crash would. Disposing kills it if it
/// still runs.
/// </summary>
public sealed class ChildProgram : IAsyncDisposable
{
    private static readonly TimeSpan ExitTimeout = TimeSpan.FromSeconds(30);

    private readonly Process _process;
    private readonly Task<string> _errors;
    private readonly Task _outputPump;

    // Guards _lines and _waiters; a waiter is completed by the first line starting with its prefix, or failed at the end of output.
    private readonly Lock _lock = new();
    private readonly List<string> _lines = [];
    private readonly List<(string Prefix, TaskCompletionSource<string> Line)> _waiters = [];
    private bool _ended;

    private ChildProgram(Process process)
    {
        _process = process;
        _errors = process.StandardError.ReadToEndAsync();
        _outputPump = PumpAsync();
    }

    /// <summary>Completes once the process exited and every output line was read.</summary>
    public Task Completion => Task.WhenAll(_process.WaitForExitAsync(), _outputPump);

    /// <summary>The exit code (only once the process exited).</summary>
    public int ExitCode => _process.ExitCode;

    /// <summary>Starts <paramref name="assemblyFileName"/> of <paramref name="projectDirectory"/> with <c>dotnet exec</c>.</summary>
    /// <exception cref="FileNotFoundException">The program was not built (see <see cref="BuiltProgram.Locate"/>).</exception>
    public static ChildProgram Start(string projectDirectory, string assemblyFileName, IEnumerable<string> arguments)
    {
        var start = new ProcessStartInfo(BuiltProgram.DotnetMuxer())
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add("exec");
        start.ArgumentList.Add(BuiltProgram.Locate(projectDirectory, assemblyFileName));
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        return new ChildProgram(Process.Start(start) ?? throw new InvalidOperationException($"Could not start {assemblyFileName}."));
    }

    /// <summary>
    /// Starts an executable (an installed .NET tool's command, for instance), with DOTNET_ROOT naming the runtime of
    /// this test host so that its app host finds one wherever dotnet is installed.
    /// </summary>
    public static ChildProgram StartExecutable(string path, IEnumerable<string> arguments) =>
        new(Process.Start(BuiltProgram.ExecutableStart(path, arguments)) ?? throw new InvalidOperationException($"Could not start {path}."));

    /// <summary>Waits for the first output line that starts with <paramref name="prefix"/> (one already printed counts) and returns it.</summary>
    /// <exception cref="InvalidOperationException">The output ended (the process exited) without such a line; the message says what it printed.</exception>
    /// <exception cref="TimeoutException">No such line within <paramref name="timeout"/>.</exception>
    public async Task<string> WaitForLineAsync(string prefix, TimeSpan timeout)
    {
        var waiter = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_lock)
        {
            foreach (string line in _lines)
            {
                if (line.StartsWith(prefix, StringComparison.Ordinal))
                {
                    return line;
                }
            }

            if (_ended)
            {
                waiter.SetException(new InvalidOperationException("The output ended."));
            }
            else
            {
                _waiters.Add((prefix, waiter));
            }
        }

        try
        {
            return await waiter.Task.WaitAsync(timeout).ConfigureAwait(false);
        }
        catch (InvalidOperationException)
        {
            await Completion.WaitAsync(ExitTimeout).ConfigureAwait(false);
            throw new InvalidOperationException($"The program ended without printing a line starting with '{prefix}': {await DescribeAsync().ConfigureAwait(false)}");
        }
    }

    /// <summary>Closes standard input (the program's signal to finish) and waits until it exited.</summary>
    public async Task CloseInputAsync()
    {
        _process.StandardInput.Close();
        await Completion.WaitAsync(ExitTimeout).ConfigureAwait(false);
    }

    /// <summary>SIGKILL on Unix (no dispose, no finalizers: a crash); waits until it is gone and its output is read.</summary>
    public async Task KillHardAsync()
    {
        _process.Kill(entireProcessTree: true);
        await Completion.WaitAsync(ExitTimeout).ConfigureAwait(false);
    }

    /// <summary>The exit state, standard output and standard error so far, for failure messages.</summary>
    public async Task<string> DescribeAsync()
    {
        var text = new StringBuilder(_process.HasExited ? $"exit code {_process.ExitCode}" : "still running");
        lock (_lock)
        {
            text.Append("\n--- stdout ---\n").AppendJoin('\n', _lines);
        }

        if (_process.HasExited)
        {
            text.Append("\n--- stderr ---\n").Append(await _errors.WaitAsync(ExitTimeout).ConfigureAwait(false));
        }

        return text.ToString();
    }

    public async ValueTask DisposeAsync()
    {
        try
        {
            if (!_process.HasExited)
            {
                _process.Kill(entireProcessTree: true);
            }

            await Completion.WaitAsync(ExitTimeout).ConfigureAwait(false);
        }
        catch (Exception e) when (e is InvalidOperationException or TimeoutException)
        {
            // Dispose must not hide the test's own failure; the process was killed or never ran.
        }
        finally
        {
            _process.Dispose();
        }
    }

    private async Task PumpAsync()
    {
        while (await _process.StandardOutput.ReadLineAsync().ConfigureAwait(false) is { } line)
        {
            lock (_lock)
            {
                _lines.Add(line);
                for (int i = _waiters.Count - 1; i >= 0; i--)
                {
                    if (line.StartsWith(_waiters[i].Prefix, StringComparison.Ordinal))
                    {
                        _waiters[i].Line.TrySetResult(line);
                        _waiters.RemoveAt(i);
                    }
                }
            }
        }

        lock (_lock)
        {
            _ended = true;
            foreach (var (_, waiter) in _waiters)
            {
                waiter.TrySetException(new InvalidOperationException("The output ended."));
            }

            _waiters.Clear();
        }
    }
}
