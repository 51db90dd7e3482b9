using System.Text.RegularExpressions;
using Dse.Testing;

namespace Dse.Architecture.Tests;

/// <summary>One meter per package, never declared twice, and every instrument listed in docs/metrics.md.</summary>
public partial class MeterTests
{
    [Fact]
    public void Meters_InSrc_AreEachDeclaredOnce()
    {
        var names = Meters(Declarations()).ToList();

        var duplicates = names.GroupBy(n => n.Name).Where(g => g.Count() > 1).Select(g => $"{g.Key}: {string.Join(", ", g.Select(n => n.Path))}").ToList();

        Assert.NotEmpty(names);
        Assert.DoesNotContain(names, n => n.Name.StartsWith("(unresolved", StringComparison.Ordinal));
        Assert.True(duplicates.Count == 0, $"Meter names declared more than once: {string.Join("; ", duplicates)}");
    }

    [Fact]
    public void Instruments_InSrc_AreEachListedInTheMetricsDoc()
    {
        string doc = File.ReadAllText(Path.Combine(BuiltProgram.RepositoryRoot(), "docs", "metrics.md"));
        var instruments = Declarations().SelectMany(d => InstrumentPattern().Matches(d.Text).Select(m => (d.Path, Name: m.Groups["name"].Value))).ToList();

        var missing = instruments.Where(i => !doc.Contains($"`{i.Name}`", StringComparison.Ordinal)).Select(i => $"{i.Name} ({i.Path})").ToList();

        Assert.NotEmpty(instruments);
        Assert.True(missing.Count == 0, $"Instruments not listed in docs/metrics.md: {string.Join(", ", missing)}");
    }

    /// <summary>The C# files under src/ that declare meters or instruments, with their text.</summary>
    private static List<(string Path, string Text)> Declarations()
    {
        string root = BuiltProgram.RepositoryRoot();
        return Directory.EnumerateFiles(Path.Combine(root, "src"), "*.cs", SearchOption.AllDirectories)
            .Where(path => !path.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}", StringComparison.Ordinal))
            .Select(path => (Path: Path.GetRelativePath(root, path), Text: File.ReadAllText(path)))
            .Where(file => file.Text.Contains("Meter", StringComparison.Ordinal))
            .ToList();
    }

    /// <summary>
    /// The meters created under src/, by name and where: every <c>Meter</c> member initialized with <c>new(...)</c> or
    /// <c>new Meter(...)</c>, its argument a string literal or a string constant (of the same class, or <c>Class.Constant</c>).
    /// </summary>
    private static IEnumerable<(string Path, string Name)> Meters(List<(string Path, string Text)> files)
    {
        var constants = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var (_, text) in files)
        {
            string? owner = ClassName().Match(text) is { Success: true } c ? c.Groups["name"].Value : null;
            foreach (Match constant in StringConstant().Matches(text))
            {
                if (owner is not null)
                {
                    constants[$"{owner}.{constant.Groups["name"].Value}"] = constant.Groups["value"].Value;
                }
            }
        }

        foreach (var (path, text) in files)
        {
            string? owner = ClassName().Match(text) is { Success: true } c ? c.Groups["name"].Value : null;
            foreach (Match creation in MeterCreation().Matches(text))
            {
                string argument = creation.Groups["argument"].Value.Trim();
                string name = argument.StartsWith('"')
                    ? argument.Trim('"')
                    : constants.GetValueOrDefault($"{owner}.{argument}") ?? constants.GetValueOrDefault(argument) ?? $"(unresolved: {argument})";
                yield return (path, name);
            }
        }
    }

    [GeneratedRegex(@"Meter\s+\w+\s*(\{\s*get;\s*\}\s*)?=\s*new(\s+Meter)?\((?<argument>[^)]*)\)")]
    private static partial Regex MeterCreation();

    [GeneratedRegex(@"\bclass\s+(?<name>\w+)")]
    private static partial Regex ClassName();

    [GeneratedRegex(@"const\s+string\s+(?<name>\w+)\s*=\s*""(?<value>[^""]*)""")]
    private static partial Regex StringConstant();

    [GeneratedRegex(@"Meter\.Create(Counter|Histogram|UpDownCounter|ObservableCounter|ObservableGauge|ObservableUpDownCounter)<\w+>\(\s*""(?<name>[^""]+)""")]
    private static partial Regex InstrumentPattern();
}
