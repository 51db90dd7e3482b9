using System.Diagnostics;

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
        var start = new ProcessStartInfo(DotnetHost())
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(HostAssembly());
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

    /// <summary>The host's dll in its own bin folder, same configuration and target framework as this test build.</summary>
    private static string HostAssembly()
    {
        var output = new DirectoryInfo(AppContext.BaseDirectory.TrimEnd(Path.DirectorySeparatorChar));
        string framework = output.Name;
        string configuration = output.Parent?.Name ?? "Release";
        var root = output;
        while (root is not null && !File.Exists(Path.Combine(root.FullName, "Dse.sln")))
        {
            root = root.Parent;
        }

        if (root is null)
        {
            throw new InvalidOperationException($"No Dse.sln above {AppContext.BaseDirectory}; cannot find the coordinator host.");
        }

        string path = Path.Combine(root.FullName, "src", "Coordinator", "Dse.Coordinator.Host", "bin", configuration, framework, "Dse.Coordinator.Host.dll");
        return File.Exists(path)
            ? path
            : throw new InvalidOperationException($"The coordinator host is not built at {path}; build Dse.sln (or this test project) in {configuration}.");
    }

    /// <summary>The muxer that runs this test host: DOTNET_HOST_PATH, this process when it is dotnet, or dotnet on the PATH.</summary>
    private static string DotnetHost()
    {
        string? host = Environment.GetEnvironmentVariable("DOTNET_HOST_PATH");
        if (!string.IsNullOrEmpty(host) && File.Exists(host))
        {
            return host;
        }

        string? self = Environment.ProcessPath;
        if (self is not null && Path.GetFileNameWithoutExtension(self).Equals("dotnet", StringComparison.OrdinalIgnoreCase))
        {
            return self;
        }

        return OperatingSystem.IsWindows() ? "dotnet.exe" : "dotnet";
    }
}
