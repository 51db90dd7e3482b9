using System.Xml.Linq;

namespace Dse.Architecture.Tests;

/// <summary>
/// The declared order of the folders of <c>src/</c>, bottom first (docs/architecture.md), and the check that every
/// project reference in <c>src/</c> points to its own folder or to a folder below it.
/// </summary>
internal static class SourceLayers
{
    /// <summary>The folders of <c>src/</c>, bottom first. A folder may reference itself and the folders before it.</summary>
    public static IReadOnlyList<string> Order { get; } = ["LibDse", "Coordinator", "Hosting", "Darq", "Services", "Tools"];

    /// <summary>
    /// Every violation of the order under <paramref name="srcRoot"/>: a project whose folder is not declared, or a
    /// reference to a project outside <c>src/</c>, in an undeclared folder, or in a folder above the referencing one.
    /// </summary>
    public static List<string> Violations(string srcRoot, IReadOnlyList<string> order)
    {
        var violations = new List<string>();
        foreach (string project in Directory.EnumerateFiles(srcRoot, "*.csproj", SearchOption.AllDirectories).Order(StringComparer.Ordinal))
        {
            string name = Relative(srcRoot, project);
            string folder = LayerOf(srcRoot, project);
            int layer = IndexOf(order, folder);
            if (layer < 0)
            {
                violations.Add($"src/{name}: folder src/{folder} has no place in the layer order ({string.Join(" -> ", order)}); add it to docs/architecture.md and SourceLayers.Order.");
                continue;
            }

            foreach (string include in ProjectReferences(project))
            {
                string target = Path.GetFullPath(Path.Combine(Path.GetDirectoryName(project)!, include.Replace('\\', '/')));
                if (!IsUnder(srcRoot, target))
                {
                    violations.Add($"src/{name} references {include}, outside src/; a src project references src projects only.");
                    continue;
                }

                string targetFolder = LayerOf(srcRoot, target);
                int targetLayer = IndexOf(order, targetFolder);
                if (targetLayer < 0 || targetLayer > layer)
                {
                    violations.Add($"src/{name} (layer src/{folder}) references src/{Relative(srcRoot, target)} in src/{targetFolder}, which is not below it ({string.Join(" -> ", order)}).");
                }
            }
        }

        return violations;
    }

    private static IEnumerable<string> ProjectReferences(string project) =>
        XDocument.Load(project).Descendants()
            .Where(e => e.Name.LocalName == "ProjectReference")
            .Select(e => (string?)e.Attribute("Include"))
            .OfType<string>();

    private static string LayerOf(string srcRoot, string path) => Relative(srcRoot, path).Split('/')[0];

    private static string Relative(string root, string path) => Path.GetRelativePath(root, path).Replace('\\', '/');

    private static bool IsUnder(string root, string path)
    {
        string relative = Path.GetRelativePath(root, path);
        return relative != ".." && !relative.StartsWith("../", StringComparison.Ordinal) && !relative.StartsWith(@"..\", StringComparison.Ordinal) && !Path.IsPathRooted(relative);
    }

    private static int IndexOf(IReadOnlyList<string> order, string folder)
    {
        for (int i = 0; i < order.Count; i++)
        {
            if (string.Equals(order[i], folder, StringComparison.Ordinal))
            {
                return i;
            }
        }

        return -1;
    }
}
