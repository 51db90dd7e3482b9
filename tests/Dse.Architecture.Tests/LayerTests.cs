using Dse.Testing;

namespace Dse.Architecture.Tests;

/// <summary>Each folder of src/ references only itself and the layers below it (docs/architecture.md).</summary>
public class LayerTests
{
    [Fact]
    public void ProjectReferences_InSrc_PointOnlyToTheSameOrALowerLayer()
    {
        string src = Path.Combine(BuiltProgram.RepositoryRoot(), "src");

        var violations = SourceLayers.Violations(src, SourceLayers.Order);

        Assert.True(violations.Count == 0, string.Join(Environment.NewLine, violations));
    }

    [Fact]
    public void SrcFolders_Every_HasAPlaceInTheOrder()
    {
        string src = Path.Combine(BuiltProgram.RepositoryRoot(), "src");

        var undeclared = Directory.EnumerateDirectories(src)
            .Select(Path.GetFileName)
            .Where(folder => !SourceLayers.Order.Contains(folder))
            .ToList();

        Assert.True(undeclared.Count == 0, $"Folders of src/ without a layer: {string.Join(", ", undeclared)}; add them to docs/architecture.md and SourceLayers.Order.");
    }

    [Fact]
    public void ArchitectureDoc_LayerTable_ListsTheDeclaredOrder()
    {
        string doc = Path.Combine(BuiltProgram.RepositoryRoot(), "docs", "architecture.md");

        // The table rows of the layers start with the folder: | `src/LibDse` | ...
        var documented = File.ReadLines(doc)
            .Where(line => line.StartsWith("| `src/", StringComparison.Ordinal))
            .Select(line => line["| `src/".Length..line.IndexOf('`', "| `src/".Length)])
            .ToList();

        Assert.Equal(SourceLayers.Order, documented);
    }

    [Fact]
    public void Violations_UpwardAndOutsideReferences_AreEachReported()
    {
        string root = Directory.CreateTempSubdirectory("dse-layers-").FullName;
        try
        {
            string src = Path.Combine(root, "src");
            WriteProject(src, "Low/Low.Core/Low.Core.csproj", "../../High/High.App/High.App.csproj");
            WriteProject(src, "High/High.App/High.App.csproj", "../../Low/Low.Core/Low.Core.csproj", "../../../tests/Helper/Helper.csproj");
            WriteProject(src, "Stray/Stray.Lib/Stray.Lib.csproj");

            var violations = SourceLayers.Violations(src, ["Low", "High"]);

            Assert.Equal(3, violations.Count);
            Assert.Contains(violations, v => v.StartsWith("src/High/High.App/High.App.csproj references ../../../tests/Helper/Helper.csproj, outside src/", StringComparison.Ordinal));
            Assert.Contains(violations, v => v.StartsWith("src/Low/Low.Core/Low.Core.csproj (layer src/Low) references src/High/High.App/High.App.csproj", StringComparison.Ordinal));
            Assert.Contains(violations, v => v.StartsWith("src/Stray/Stray.Lib/Stray.Lib.csproj: folder src/Stray has no place", StringComparison.Ordinal));
        }
        finally
        {
            Directory.Delete(root, recursive: true);
        }
    }

    private static void WriteProject(string src, string path, params string[] references)
    {
        string file = Path.Combine(src, path);
        Directory.CreateDirectory(Path.GetDirectoryName(file)!);
        string items = string.Concat(references.Select(r => $"<ProjectReference Include=\"{r}\" />"));
        File.WriteAllText(file, $"<Project Sdk=\"Microsoft.NET.Sdk\"><ItemGroup>{items}</ItemGroup></Project>");
    }
}
