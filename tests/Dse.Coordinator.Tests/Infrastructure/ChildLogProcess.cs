using System.Diagnostics;
using Dse.Testing;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>This test assembly run as a separate OS process (see Program.cs), talking over standard input and output.</summary>
public sealed class ChildLogProcess : IAsyncDisposable
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(60);

    private readonly Process _process;
    private readonly Task<string> _stderr;

    private ChildLogProcess(Process process)
    {
        _process = process;
        _stderr = process.StandardError.ReadToEndAsync();
    }

    public int Id => _process.Id;

    public static ChildLogProcess Start(IReadOnlyDictionary<string, string>? environment, params string[] arguments)
    {
        var start = new ProcessStartInfo(BuiltProgram.DotnetMuxer())
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add("exec");
        start.ArgumentList.Add(typeof(ChildLogProcess).Assembly.Location);
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        foreach (var (name, value) in environment ?? new Dictionary<string, string>())
        {
            start.Environment[name] = value;
        }

        return new ChildLogProcess(Process.Start(start) ?? throw new InvalidOperationException("Could not start the child process."));
    }

    /// <summary>The child's next output line; fails with its standard error if it exits or stays silent.</summary>
    public async Task<string> ReadLineAsync()
    {
        using var timeout = new CancellationTokenSource(Timeout);
        string? line = await _process.StandardOutput.ReadLineAsync(timeout.Token);
        return line ?? throw new InvalidOperationException($"The child exited without output. Standard error:\n{await _stderr}");
    }

    public async Task<int> WaitForExitAsync()
    {
        using var timeout = new CancellationTokenSource(Timeout);
        await _process.WaitForExitAsync(timeout.Token);
        return _process.ExitCode;
    }

    /// <summary>SIGKILL on Unix (TerminateProcess on Windows): no finalizers, no dispose, like a crash.</summary>
    public async Task KillHardAsync()
    {
        _process.Kill();
        await WaitForExitAsync();
    }

    public async ValueTask DisposeAsync()
    {
        if (!_process.HasExited)
        {
            _process.Kill(entireProcessTree: true);
            await WaitForExitAsync();
        }

        _process.Dispose();
    }
}
