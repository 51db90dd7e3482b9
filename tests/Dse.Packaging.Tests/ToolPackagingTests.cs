using System.Text.Json;
using System.Xml.Linq;
using Dse.Testing;
using Xunit.Abstractions;

namespace Dse.Packaging.Tests;

/// <summary>
/// The operator's path (docs/packages.md, docs/cli.md): pack the two .NET tools into a local folder feed, install them
/// with <c>dotnet tool install</c>, start a coordinator with the installed <c>dse-coordinator</c> and read its view with
/// the installed <c>dse</c>; and every package carries the repository's license.
/// </summary>
[Trait("Category", "Packaging")]
public sealed class ToolPackagingTests(ITestOutputHelper output)
{
    private static readonly TimeSpan s_startTimeout = TimeSpan.FromSeconds(60);

    [Fact]
    public async Task Tools_InstalledFromPackedPackages_CoordinatorServesAndDseStatusReadsIt()
    {
        string root = BuiltProgram.RepositoryRoot();
        string work = Directory.CreateTempSubdirectory("dse-tools-").FullName;
        try
        {
            string feed = Path.Combine(work, "feed");
            string tools = Path.Combine(work, "tools");
            string suffix = $"tools.t{DateTime.UtcNow:yyyyMMddHHmmss}";
            string version = $"{PackagingCommands.VersionPrefix(root)}-{suffix}";

            foreach (string project in new[] { "src/Tools/Dse.Cli/Dse.Cli.csproj", "src/Coordinator/Dse.Coordinator.Host/Dse.Coordinator.Host.csproj" })
            {
                var pack = await RunAsync(work, "pack", Path.Combine(root, project), "-c", "Release", "-o", feed,
                    "--artifacts-path", Path.Combine(work, "artifacts"), $"-p:VersionSuffix={suffix}", "--disable-build-servers");
                Assert.DoesNotContain(pack.OutputLines, line => line.Contains(": warning ", StringComparison.Ordinal));
            }

            foreach (string id in new[] { "Dse.Cli", "Dse.Coordinator.Host" })
            {
                string package = Path.Combine(feed, $"{id}.{version}.nupkg");
                Assert.True(File.Exists(package), $"{id}.{version}.nupkg is not in the feed");
                await RunAsync(work, "tool", "install", id, "--version", version, "--tool-path", tools, "--add-source", feed);
            }

            // Every package the feed holds (the tools and the libraries packed with them) declares the license.
            foreach (string package in Directory.EnumerateFiles(feed, "*.nupkg"))
            {
                Assert.Equal("MIT", LicenseExpression(package));
            }

            string coordinatorTool = Path.Combine(tools, "dse-coordinator");
            string dseTool = Path.Combine(tools, "dse");
            var help = await BuiltProgram.RunExecutableAsync(coordinatorTool, ["--help"], PackagingCommands.CommandTimeout);
            Assert.True(help.ExitCode == 0, help.Describe());
            Assert.StartsWith("Usage: dse-coordinator --port N --log LOG", help.StandardOutput, StringComparison.Ordinal);

            await using var coordinator = ChildProgram.StartExecutable(coordinatorTool, ["--port", "0", "--log", $"file:{Path.Combine(work, "coordinator.log")}"]);
            string listening = await coordinator.WaitForLineAsync("DSE coordinator listening on ", s_startTimeout);
            string address = listening["DSE coordinator listening on ".Length..].Trim();

            var status = await BuiltProgram.RunExecutableAsync(dseTool, ["status", "--coordinator", address, "--json"], PackagingCommands.CommandTimeout);
            Assert.True(status.ExitCode == 0, status.Describe());
            using var json = JsonDocument.Parse(status.StandardOutput);
            Assert.Equal(1, json.RootElement.GetProperty("incarnation").GetInt64());
            Assert.Equal(0, json.RootElement.GetProperty("worldLine").GetInt64());
        }
        finally
        {
            Directory.Delete(work, recursive: true);
        }
    }

    /// <summary>The SPDX expression a package's nuspec declares, or <c>null</c>.</summary>
    private static string? LicenseExpression(string package)
    {
        var license = XDocument.Parse(PackagingCommands.Nuspec(package)).Descendants().SingleOrDefault(e => e.Name.LocalName == "license");
        Assert.True(license is null || (string?)license.Attribute("type") == "expression", $"{Path.GetFileName(package)} declares a license that is not an expression");
        return license?.Value;
    }

    private Task<ProgramRun> RunAsync(string workingDirectory, params string[] arguments) => PackagingCommands.RunAsync(output, workingDirectory, arguments);
}
