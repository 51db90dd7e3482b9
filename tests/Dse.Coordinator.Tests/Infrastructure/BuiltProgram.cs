namespace Dse.Coordinator.Tests.Infrastructure;

/// <summary>
/// Finds the programs the multi-process tests start: the dotnet muxer, and other projects' build output in the same
/// configuration as this test assembly (the test project references them with <c>ReferenceOutputAssembly=false</c>,
/// so building the tests builds them).
/// </summary>
public static class BuiltProgram
{
    /// <summary>
    /// The build output of <paramref name="projectDirectory"/> (relative to the repository root), for example
    /// <c>tests/Dse.Coordinator.Participant</c> and <c>Dse.Coordinator.Participant.dll</c>.
    /// </summary>
    /// <exception cref="FileNotFoundException">The program was not built; the message names the path and how to build it.</exception>
    public static string Locate(string projectDirectory, string assemblyFileName)
    {
        // This assembly lives in {root}/tests/Dse.Coordinator.Tests/bin/{Configuration}/{TargetFramework}/.
        var output = new DirectoryInfo(AppContext.BaseDirectory.TrimEnd(Path.DirectorySeparatorChar));
        string targetFramework = output.Name;
        string configuration = output.Parent?.Name ?? string.Empty;
        var root = output;
        while (root is not null && !File.Exists(Path.Combine(root.FullName, "Dse.sln")))
        {
            root = root.Parent;
        }

        string path = root is null
            ? Path.Combine(projectDirectory, assemblyFileName)
            : Path.Combine(root.FullName, projectDirectory, "bin", configuration, targetFramework, assemblyFileName);
        return File.Exists(path)
            ? path
            : throw new FileNotFoundException($"{assemblyFileName} is not built at {path}; build it with 'dotnet build {projectDirectory} -c {configuration}'.", path);
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
