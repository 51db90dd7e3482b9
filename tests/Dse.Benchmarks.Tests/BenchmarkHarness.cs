using System.Diagnostics;

namespace Dse.Benchmarks.Tests;

/// <summary>
/// Runs the benchmark harness (benchmarks/Dse.Benchmarks, its own build output next to this test build's configuration)
/// with <c>dotnet</c> as a separate process and collects what it printed. A run that outlasts the timeout is killed,
/// with its whole process tree, and reported as such.
/// </summary>
internal static class BenchmarkHarness
{
    /// <summary>The longest a single scenario may take in <c>--quick</c> mode before the run counts as hung.</summary>
    public static readonly TimeSpan Timeout = TimeSpan.FromMinutes(3);

    /// <summary>Runs the harness with <paramref name="arguments"/> and extra environment variables.</summary>
    public static async Task<HarnessRun> RunAsync(IReadOnlyDictionary<string, string>? environment, params string[] arguments)
    {
        var start = new ProcessStartInfo(DotnetHost())
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(HarnessAssembly());
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        // The harness's own variables come only from the test.
        start.Environment.Remove("DSE_BENCH_RESULTS");
        start.Environment.Remove("DSE_BENCH_SELF_TEST");
        foreach (var (name, value) in environment ?? new Dictionary<string, string>())
        {
            start.Environment[name] = value;
        }

        using var process = Process.Start(start) ?? throw new InvalidOperationException("Could not start the benchmark harness.");
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        var watch = Stopwatch.StartNew();
        using var timeout = new CancellationTokenSource(Timeout);
        bool timedOut = false;
        try
        {
            await process.WaitForExitAsync(timeout.Token);
        }
        catch (OperationCanceledException) when (timeout.IsCancellationRequested)
        {
            timedOut = true;
            process.Kill(entireProcessTree: true);
            await process.WaitForExitAsync();
        }

        return new HarnessRun(process.ExitCode, await stdout, await stderr, timedOut, watch.Elapsed);
    }

    /// <summary>The harness's dll in its own bin folder, same configuration and target framework as this test build.</summary>
    private static string HarnessAssembly()
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
            throw new InvalidOperationException($"No Dse.sln above {AppContext.BaseDirectory}; cannot find the benchmark harness.");
        }

        string path = Path.Combine(root.FullName, "benchmarks", "Dse.Benchmarks", "bin", configuration, framework, "Dse.Benchmarks.dll");
        return File.Exists(path)
            ? path
            : throw new InvalidOperationException($"The benchmark harness is not built at {path}; build Dse.sln (or this test project) in {configuration}.");
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
