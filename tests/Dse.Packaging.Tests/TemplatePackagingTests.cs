using System.Text.Json;
using System.Xml.Linq;
using Dse.Testing;
using Xunit.Abstractions;

namespace Dse.Packaging.Tests;

/// <summary>
/// The path a newcomer takes (docs/packages.md): pack the libraries and the template into a local folder feed, install
/// the template from it, create a service with <c>dotnet new dse-service</c>, and build and test what it created against
/// the packed packages, not the repository's projects.
/// </summary>
[Trait("Category", "Packaging")]
public sealed class TemplatePackagingTests(ITestOutputHelper output)
{
    // What a service made with AddDse restores: Dse.Hosting and what it depends on.
    private static readonly string[] s_servicePackages =
        ["Dse.Storage", "Dse.LibDse", "Dse.Grpc", "Dse.Coordinator.Core", "Dse.Coordinator.Client", "Dse.Hosting"];

    [Fact]
    public async Task DseServiceTemplate_CreatedFromPackedPackages_BuildsAndPassesItsTests()
    {
        string root = BuiltProgram.RepositoryRoot();
        string work = Directory.CreateTempSubdirectory("dse-packaging-").FullName;
        try
        {
            string feed = Path.Combine(work, "feed");
            string hive = Path.Combine(work, "template-hive");
            string app = Path.Combine(work, "app");
            string packages = Path.Combine(work, "packages");
            // A version of this run's own: a package of that version can only have come from this run's feed.
            string suffix = $"packaging.t{DateTime.UtcNow:yyyyMMddHHmmss}";
            string version = $"{PackagingCommands.VersionPrefix(root)}-{suffix}";

            // 1. Pack the service's packages and the template into the feed; bin and obj go to the work folder, so the
            //    repository's own build output is neither used nor touched.
            string filter = Path.Combine(work, "packages.slnf");
            WriteSolutionFilter(filter, root,
                [.. s_servicePackages.Select(ProjectOf), "templates/Dse.Templates/Dse.Templates.csproj"]);
            var pack = await RunAsync(work, "pack", filter, "-c", "Release", "-o", feed, "--artifacts-path", Path.Combine(work, "artifacts"),
                $"-p:VersionSuffix={suffix}", "--disable-build-servers");
            Assert.DoesNotContain(pack.OutputLines, line => line.Contains(": warning ", StringComparison.Ordinal));
            foreach (string id in s_servicePackages)
            {
                Assert.True(File.Exists(Path.Combine(feed, $"{id}.{version}.nupkg")), $"{id}.{version}.nupkg is not in the feed");
                Assert.True(File.Exists(Path.Combine(feed, $"{id}.{version}.snupkg")), $"{id}.{version}.snupkg (symbols) is not in the feed");
                Assert.Contains("<license type=\"expression\">MIT</license>", PackagingCommands.Nuspec(Path.Combine(feed, $"{id}.{version}.nupkg")), StringComparison.Ordinal);
            }

            // 2. Install the template into a hive of this test's own (the user's templates stay as they are) and create a service.
            await RunAsync(work, "new", "install", Path.Combine(feed, $"Dse.Templates.{version}.nupkg"), "--debug:custom-hive", hive);
            await RunAsync(work, "new", "dse-service", "-n", "Acme.Orders", "-o", app, "--debug:custom-hive", hive);

            string service = Path.Combine(app, "src", "Acme.Orders", "Acme.Orders.csproj");
            Assert.True(File.Exists(service), "the template created no src/Acme.Orders/Acme.Orders.csproj");
            Assert.True(File.Exists(Path.Combine(app, "README.md")), "the template created no README.md");
            Assert.Contains($"<DseVersion>{version}</DseVersion>", File.ReadAllText(Path.Combine(app, "Directory.Packages.props")), StringComparison.Ordinal);
            AssertReferencesOnlyItsOwnProjects(app);

            // 3. Restore from the feed (Dse.* only from there) and the registry this machine uses, into a packages folder of
            //    this test's own; the user's folder serves as a read-only fallback for everything else.
            WriteNuGetConfig(Path.Combine(app, "NuGet.config"), feed, await RegistrySourcesAsync(work), await GlobalPackagesFolderAsync(work));
            var test = await RunAsync(app, ["test", "Acme.Orders.slnx", "--disable-build-servers"], new Dictionary<string, string> { ["NUGET_PACKAGES"] = packages });
            Assert.Contains(test.OutputLines, line => line.StartsWith("Passed!", StringComparison.Ordinal));

            // 4. The Dse packages it restored are the ones packed above, from the feed.
            foreach (string id in s_servicePackages)
            {
                string metadata = Path.Combine(packages, id.ToLowerInvariant(), version, ".nupkg.metadata");
                Assert.True(File.Exists(metadata), $"{id} {version} was not restored into the test's packages folder");
                using var json = JsonDocument.Parse(File.ReadAllText(metadata));
                Assert.Equal(Path.GetFullPath(feed), Path.GetFullPath(json.RootElement.GetProperty("source").GetString()!));
            }
        }
        finally
        {
            Directory.Delete(work, recursive: true);
        }
    }

    private static string ProjectOf(string id) => id switch
    {
        "Dse.Storage" or "Dse.LibDse" or "Dse.Grpc" => $"src/LibDse/{id}/{id}.csproj",
        "Dse.Hosting" => $"src/Hosting/{id}/{id}.csproj",
        _ => $"src/Coordinator/{id}/{id}.csproj",
    };

    /// <summary>Every ProjectReference of the created projects points inside the created folder; the service has none.</summary>
    private static void AssertReferencesOnlyItsOwnProjects(string app)
    {
        foreach (string project in Directory.EnumerateFiles(app, "*.csproj", SearchOption.AllDirectories))
        {
            foreach (var reference in XDocument.Load(project).Descendants("ProjectReference"))
            {
                string target = Path.GetFullPath(Path.Combine(Path.GetDirectoryName(project)!, reference.Attribute("Include")!.Value));
                Assert.StartsWith(Path.GetFullPath(app) + Path.DirectorySeparatorChar, target, StringComparison.Ordinal);
                Assert.True(File.Exists(target), $"{project} references {target}, which the template did not create");
            }
        }

        Assert.Empty(XDocument.Load(Path.Combine(app, "src", "Acme.Orders", "Acme.Orders.csproj")).Descendants("ProjectReference"));
    }

    private static void WriteSolutionFilter(string path, string root, IReadOnlyList<string> projects) =>
        File.WriteAllText(path, JsonSerializer.Serialize(new { solution = new { path = Path.Combine(root, "Dse.sln"), projects } }));

    private static void WriteNuGetConfig(string path, string feed, IReadOnlyList<string> registries, string fallback)
    {
        var sources = new XElement("packageSources", new XElement("clear"), new XElement("add", new XAttribute("key", "dse-feed"), new XAttribute("value", feed)));
        var mapping = new XElement("packageSourceMapping",
            new XElement("packageSource", new XAttribute("key", "dse-feed"), new XElement("package", new XAttribute("pattern", "Dse.*"))));
        for (int i = 0; i < registries.Count; i++)
        {
            sources.Add(new XElement("add", new XAttribute("key", $"registry{i}"), new XAttribute("value", registries[i])));
            mapping.Add(new XElement("packageSource", new XAttribute("key", $"registry{i}"), new XElement("package", new XAttribute("pattern", "*"))));
        }

        new XDocument(new XElement("configuration",
            sources,
            new XElement("fallbackPackageFolders", new XElement("clear"), new XElement("add", new XAttribute("key", "user"), new XAttribute("value", fallback))),
            mapping)).Save(path);
    }

    /// <summary>The enabled package sources of this machine's NuGet configuration (the registry or its mirror).</summary>
    private async Task<IReadOnlyList<string>> RegistrySourcesAsync(string work)
    {
        var list = await RunAsync(work, "nuget", "list", "source", "--format", "Short");
        // Lines are "E <source>" for enabled sources, "D <source>" for disabled ones.
        var sources = list.OutputLines.Where(line => line.StartsWith("E ", StringComparison.Ordinal)).Select(line => line[2..].Trim()).ToList();
        Assert.True(sources.Count > 0, $"no enabled NuGet source on this machine:\n{list.Describe()}");
        return sources;
    }

    /// <summary>The user's global packages folder (NUGET_PACKAGES or the configured default).</summary>
    private async Task<string> GlobalPackagesFolderAsync(string work)
    {
        string? configured = Environment.GetEnvironmentVariable("NUGET_PACKAGES");
        if (!string.IsNullOrEmpty(configured))
        {
            return configured;
        }

        var locals = await RunAsync(work, "nuget", "locals", "global-packages", "--list");
        const string prefix = "global-packages:";
        string line = Assert.Single(locals.OutputLines, line => line.StartsWith(prefix, StringComparison.Ordinal));
        return line[prefix.Length..].Trim();
    }

    private Task<ProgramRun> RunAsync(string workingDirectory, params string[] arguments) => RunAsync(workingDirectory, arguments, null);

    private Task<ProgramRun> RunAsync(string workingDirectory, string[] arguments, IReadOnlyDictionary<string, string>? environment) =>
        PackagingCommands.RunAsync(output, workingDirectory, arguments, environment);
}
