using System.IO.Compression;
using System.Xml.Linq;
using Dse.Testing;
using Xunit.Abstractions;

namespace Dse.Packaging.Tests;

/// <summary>What the packaging tests share: the dotnet CLI run as a user runs it, the packages' version and their nuspec.</summary>
internal static class PackagingCommands
{
    public static readonly TimeSpan CommandTimeout = TimeSpan.FromMinutes(10);

    /// <summary>The version prefix every package shares, from the repository's Directory.Build.props.</summary>
    public static string VersionPrefix(string root) =>
        XDocument.Load(Path.Combine(root, "Directory.Build.props")).Descendants("VersionPrefix").Single().Value;

    /// <summary>The text of a package's nuspec.</summary>
    public static string Nuspec(string package)
    {
        using var archive = ZipFile.OpenRead(package);
        using var reader = new StreamReader(archive.Entries.Single(e => e.FullName.EndsWith(".nuspec", StringComparison.Ordinal) && !e.FullName.Contains('/', StringComparison.Ordinal)).Open());
        return reader.ReadToEnd();
    }

    /// <summary>Runs the dotnet CLI, logs how long it took, and fails the test with everything it printed unless it succeeded.</summary>
    public static async Task<ProgramRun> RunAsync(ITestOutputHelper output, string workingDirectory, string[] arguments, IReadOnlyDictionary<string, string>? environment = null)
    {
        var run = await DotnetCommand.RunAsync(workingDirectory, arguments, CommandTimeout, environment);
        output.WriteLine($"dotnet {string.Join(' ', arguments)}: {run.Elapsed.TotalSeconds:F1} s, exit code {run.ExitCode}");
        Assert.True(run.ExitCode == 0 && !run.TimedOut, $"dotnet {string.Join(' ', arguments)} failed: {run.Describe()}");
        return run;
    }
}
