using System.Diagnostics;
using Dse.Testing;

namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>
/// The real coordinator host (src/Coordinator/Dse.Coordinator.Host, its own build output next to this test build's
/// configuration) run with <c>dotnet</c> as a separate OS process. Killed on dispose.
/// </summary>
public sealed class HostProcess : IAsyncDisposable
{
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(60);

    private readonly Process _process;
    private readonly Task<string> _stderr;

    private HostProcess(Process process)
    {
        _process = process;
        _stderr = process.StandardError.ReadToEndAsync();
    }

    public static HostProcess Start(params string[] arguments) => Start(null, arguments);

    /// <summary>Starts the host with extra environment variables (the blob connection string, for instance).</summary>
    public static HostProcess Start(IReadOnlyDictionary<string, string>? environment, params string[] arguments)
    {
        var start = new ProcessStartInfo(BuiltProgram.DotnetMuxer())
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(BuiltProgram.Locate("src/Coordinator/Dse.Coordinator.Host", "Dse.Coordinator.Host.dll"));
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        start.Environment.Remove("DSE_BLOB_CONNECTION_STRING");
        foreach (var (name, value) in environment ?? new Dictionary<string, string>())
        {
            start.Environment[name] = value;
        }

        return new HostProcess(Process.Start(start) ?? throw new InvalidOperationException("Could not start the coordinator host."));
    }

    /// <summary>The next line on standard output; fails with standard error if the host exits first.</summary>
    public async Task<string> ReadLineAsync()
    {
        using var timeout = new CancellationTokenSource(Timeout);
        string? line = await _process.StandardOutput.ReadLineAsync(timeout.Token);
        return line ?? throw new InvalidOperationException($"The coordinator host exited without that output (exit code {await WaitForExitAsync()}). Standard error:\n{await _stderr}");
    }

    public async Task<int> WaitForExitAsync()
    {
        using var timeout = new CancellationTokenSource(Timeout);
        await _process.WaitForExitAsync(timeout.Token);
        return _process.ExitCode;
    }

    /// <summary>Everything the host wrote to standard error; completes once it exited.</summary>
    public Task<string> StandardErrorAsync() => _stderr;

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
