using System.Diagnostics;

namespace Dse.Testing;

/// <summary>
/// Finds what tests start in processes of their own: the dotnet muxer, the repository, and other projects' build
/// output in the same configuration and target framework as the running test assembly (a test project references
/// such a program with <c>ReferenceOutputAssembly=false</c>, so building the tests builds it).
/// </summary>
public static class BuiltProgram
{
    /// <summary>The repository root: the first directory above the test's output that holds <c>Dse.sln</c>.</summary>
    /// <exception cref="InvalidOperationException">The tests run outside the repository's build output.</exception>
    public static string RepositoryRoot()
    {
        for (var directory = new DirectoryInfo(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "Dse.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException($"No Dse.sln above {AppContext.BaseDirectory}; run the tests from the repository's build output.");
    }

    /// <summary>
    /// The build output of <paramref name="projectDirectory"/> (relative to the repository root, with '/'), for example
    /// <c>Locate("src/Coordinator/Dse.Coordinator.Host", "Dse.Coordinator.Host.dll")</c>.
    /// </summary>
    /// <exception cref="FileNotFoundException">The program was not built; the message names the path and how to build it.</exception>
    public static string Locate(string projectDirectory, string assemblyFileName)
    {
        // The test assembly runs from {root}/tests/{project}/bin/{configuration}/{framework}/.
        var output = new DirectoryInfo(AppContext.BaseDirectory.TrimEnd(Path.DirectorySeparatorChar));
        string framework = output.Name;
        string configuration = output.Parent?.Name ?? "Release";
        string path = Path.Combine([RepositoryRoot(), .. projectDirectory.Split('/'), "bin", configuration, framework, assemblyFileName]);
        return File.Exists(path)
            ? path
            : throw new FileNotFoundException($"{assemblyFileName} is not built at {path}; build it with 'dotnet build {projectDirectory} -c {configuration}'.", path);
    }

    /// <summary>
    /// Runs the built <paramref name="assemblyFileName"/> of <paramref name="projectDirectory"/> (see <see cref="Locate"/>)
    /// with the dotnet muxer and collects what it printed. A run that outlasts <paramref name="timeout"/> is killed, with its
    /// whole process tree, and reported as <see cref="ProgramRun.TimedOut"/>.
    /// </summary>
    /// <param name="environment">Variables to set; a null value removes the variable the test process would pass on.</param>
    public static async Task<ProgramRun> RunAsync(string projectDirectory, string assemblyFileName, IReadOnlyList<string> arguments, TimeSpan timeout,
        IReadOnlyDictionary<string, string?>? environment = null)
    {
        var start = new ProcessStartInfo(DotnetMuxer())
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(Locate(projectDirectory, assemblyFileName));
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        foreach (var (name, value) in environment ?? new Dictionary<string, string?>())
        {
            if (value is null)
            {
                start.Environment.Remove(name);
            }
            else
            {
                start.Environment[name] = value;
            }
        }

        return await RunToEndAsync(start, assemblyFileName, timeout).ConfigureAwait(false);
    }

    /// <summary>
    /// Runs an executable (an installed .NET tool's command, for instance) to its end, with DOTNET_ROOT naming the
    /// runtime of this test host; a run that outlasts <paramref name="timeout"/> is killed with its process tree.
    /// </summary>
    public static Task<ProgramRun> RunExecutableAsync(string path, IReadOnlyList<string> arguments, TimeSpan timeout) =>
        RunToEndAsync(ExecutableStart(path, arguments), Path.GetFileName(path), timeout);

    /// <summary>How to start an executable with redirected streams and DOTNET_ROOT set to this test host's runtime.</summary>
    internal static ProcessStartInfo ExecutableStart(string path, IEnumerable<string> arguments)
    {
        var start = new ProcessStartInfo(path)
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (string argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        string muxer = new FileInfo(DotnetMuxer()).ResolveLinkTarget(returnFinalTarget: true)?.FullName ?? Path.GetFullPath(DotnetMuxer());
        start.Environment["DOTNET_ROOT"] = Path.GetDirectoryName(muxer)!;
        return start;
    }

    /// <summary>Starts <paramref name="start"/>, collects its output, and kills its process tree if it outlasts <paramref name="timeout"/>.</summary>
    internal static async Task<ProgramRun> RunToEndAsync(ProcessStartInfo start, string what, TimeSpan timeout)
    {
        using var process = Process.Start(start) ?? throw new InvalidOperationException($"Could not start {what}.");
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        var watch = Stopwatch.StartNew();
        using var limit = new CancellationTokenSource(timeout);
        bool timedOut = false;
        try
        {
            await process.WaitForExitAsync(limit.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (limit.IsCancellationRequested)
        {
            timedOut = true;
            process.Kill(entireProcessTree: true);
            await process.WaitForExitAsync().ConfigureAwait(false);
        }

        return new ProgramRun(process.ExitCode, await stdout.ConfigureAwait(false), await stderr.ConfigureAwait(false), timedOut, watch.Elapsed);
    }

    /// <summary>The muxer that runs this test host: DOTNET_HOST_PATH, this process when it is dotnet, or dotnet on the PATH.</summary>
    public static string DotnetMuxer()
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
