using System.Diagnostics;
using Dse.Testing;

namespace Dse.Darq.Tests;

/// <summary>
/// The <c>Dse.Darq.TestHost</c> program as a child process (<c>dotnet exec</c>): each standard output line goes to a
/// callback, in order; standard error is kept for failure messages. Disposing kills the process if it still runs.
/// </summary>
internal sealed class DarqHostProcess : IAsyncDisposable
{
    private static readonly TimeSpan ExitTimeout = TimeSpan.FromSeconds(30);

    private readonly Process _process;
    private readonly Task _outputPump;
    private readonly Task<string> _errors;

    private DarqHostProcess(Process process, Action<string> onLine)
    {
        _process = process;
        _errors = process.StandardError.ReadToEndAsync();
        _outputPump = PumpAsync(process, onLine);
    }

    /// <summary>Completes once the process exited and every output line was handled.</summary>
    public Task Completion => Task.WhenAll(_process.WaitForExitAsync(), _outputPump);

    public int ExitCode => _process.ExitCode;

    /// <summary>Standard error, whole, once the process closed it.</summary>
    public Task<string> Errors => _errors;

    /// <summary>Starts the host with <paramref name="arguments"/>; <paramref name="onLine"/> sees each output line.</summary>
    public static DarqHostProcess Start(IEnumerable<string> arguments, Action<string> onLine)
        => StartProgram(BuiltProgram.Locate("tests/Dse.Darq.TestHost", "Dse.Darq.TestHost.dll"), arguments, onLine);

    /// <summary>Starts another program of this repository built next to the tests (see <see cref="BuiltAssembly"/>).</summary>
    public static DarqHostProcess StartProgram(string assembly, IEnumerable<string> arguments, Action<string> onLine)
    {
        var start = new ProcessStartInfo(BuiltProgram.DotnetMuxer())
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add("exec");
        start.ArgumentList.Add(assembly);
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        return new DarqHostProcess(Process.Start(start) ?? throw new InvalidOperationException("Could not start the DARQ test host."), onLine);
    }

    /// <summary>Writes a line to standard input (for <c>--paced</c>: one more batch); false once the process is gone.</summary>
    public bool TryWriteLine(string line)
    {
        lock (_process)
        {
            try
            {
                _process.StandardInput.WriteLine(line);
                _process.StandardInput.Flush();
                return true;
            }
            catch (Exception e) when (e is IOException or InvalidOperationException or ObjectDisposedException)
            {
                return false;
            }
        }
    }

    /// <summary>SIGKILL (no dispose, no finalizers: a crash); waits until it is gone and its output is drained.</summary>
    public async Task KillHardAsync()
    {
        _process.Kill(entireProcessTree: true);
        await Completion.WaitAsync(ExitTimeout);
    }

    /// <summary>The exit state and standard error, for failure messages (only once the process exited).</summary>
    public string Describe() => _process.HasExited
        ? $"exit code {_process.ExitCode}; standard error:\n{(_errors.IsCompleted ? _errors.Result : "(not drained)")}"
        : "still running";

    public async ValueTask DisposeAsync()
    {
        try
        {
            if (!_process.HasExited)
            {
                _process.Kill(entireProcessTree: true);
            }

            await Completion.WaitAsync(ExitTimeout);
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

    private static async Task PumpAsync(Process process, Action<string> onLine)
    {
        while (await process.StandardOutput.ReadLineAsync() is { } line)
        {
            onLine(line);
        }
    }
}
