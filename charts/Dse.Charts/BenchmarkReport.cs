using System.Globalization;
using System.Text.Json;

namespace Dse.Charts;

/// <summary>
/// One scenario's harness output (<c>benchmarks/results/&lt;scenario&gt;.json</c>). Fields a chart needs are
/// checked when the chart asks for them, so an unrelated odd field never stops a chart.
/// </summary>
internal sealed class BenchmarkReport
{
    private readonly Dictionary<string, JsonElement> _results;
    private readonly Dictionary<string, JsonElement>? _samples;

    private BenchmarkReport(
        string file, string scenario, string timestampUtc, bool quick, string machine,
        Dictionary<string, JsonElement> results, Dictionary<string, JsonElement>? samples)
    {
        File = file;
        Scenario = scenario;
        TimestampUtc = timestampUtc;
        Quick = quick;
        Machine = machine;
        _results = results;
        _samples = samples;
    }

    /// <summary>The file this report was read from.</summary>
    public string File { get; }

    /// <summary>The harness scenario name.</summary>
    public string Scenario { get; }

    /// <summary>When the run finished, as the harness wrote it.</summary>
    public string TimestampUtc { get; }

    /// <summary>Whether the harness ran its shortened (quick) variant.</summary>
    public bool Quick { get; }

    /// <summary>One line describing the machine the run was made on.</summary>
    public string Machine { get; }

    /// <summary>The line every chart prints under its title: what ran, when, where.</summary>
    public string Footnote =>
        $"{Scenario} run {TimestampUtc}{(Quick ? " (quick run)" : "")} on {Machine}";

    /// <summary>Reads and shape-checks a results file.</summary>
    /// <exception cref="ChartInputException">The file is not JSON or lacks the common fields.</exception>
    public static BenchmarkReport Read(string file)
    {
        string text;
        try
        {
            text = System.IO.File.ReadAllText(file);
        }
        catch (IOException ex)
        {
            throw new ChartInputException(file, "(file)", $"cannot be read: {ex.Message}", ex);
        }

        JsonDocument document;
        try
        {
            document = JsonDocument.Parse(text);
        }
        catch (JsonException ex)
        {
            throw new ChartInputException(
                file, $"line {ex.LineNumber + 1}, byte {ex.BytePositionInLine + 1}", $"not valid JSON: {ex.Message}", ex);
        }

        using (document)
        {
            var root = document.RootElement;
            if (root.ValueKind != JsonValueKind.Object)
            {
                throw new ChartInputException(file, "(root)", $"expected a JSON object, found {Describe(root)}");
            }

            var scenario = RequireString(file, root, "scenario");
            var timestamp = RequireString(file, root, "timestamp_utc");
            var quick = false;
            if (root.TryGetProperty("quick", out var quickElement))
            {
                quick = quickElement.ValueKind switch
                {
                    JsonValueKind.True => true,
                    JsonValueKind.False => false,
                    _ => throw new ChartInputException(file, "quick", $"expected true or false, found {Describe(quickElement)}"),
                };
            }

            var machine = DescribeMachine(file, root);
            var results = ObjectMembers(file, root, "results", required: true)!;
            var samples = ObjectMembers(file, root, "samples", required: false);
            return new BenchmarkReport(file, scenario, timestamp, quick, machine, results, samples);
        }
    }

    /// <summary>A number from <c>results</c>.</summary>
    /// <exception cref="ChartInputException">The key is missing or not a number.</exception>
    public double Result(string key)
    {
        if (!_results.TryGetValue(key, out var element))
        {
            throw new ChartInputException(File, $"results.{key}", "missing");
        }

        return Number(element, $"results.{key}");
    }

    /// <summary>A number from <c>results</c>, or <paramref name="fallback"/> when the key is absent.</summary>
    public double ResultOr(string key, double fallback) => _results.ContainsKey(key) ? Result(key) : fallback;

    /// <summary>
    /// A sample series from the top-level <c>samples</c> object, or <see langword="null"/> when the run wrote none.
    /// </summary>
    /// <exception cref="ChartInputException">The series is there but is not an array of numbers.</exception>
    public double[]? Samples(string key)
    {
        if (_samples is null || !_samples.TryGetValue(key, out var element))
        {
            return null;
        }

        var field = $"samples.{key}";
        if (element.ValueKind != JsonValueKind.Array)
        {
            throw new ChartInputException(File, field, $"expected an array of numbers, found {Describe(element)}");
        }

        var values = new double[element.GetArrayLength()];
        var i = 0;
        foreach (var item in element.EnumerateArray())
        {
            values[i] = Number(item, $"{field}[{i}]");
            i++;
        }

        return values;
    }

    private double Number(JsonElement element, string field)
    {
        if (element.ValueKind != JsonValueKind.Number || !element.TryGetDouble(out var value) || !double.IsFinite(value))
        {
            throw new ChartInputException(File, field, $"expected a number, found {Describe(element)}");
        }

        return value;
    }

    private static string RequireString(string file, JsonElement root, string name)
    {
        if (!root.TryGetProperty(name, out var element))
        {
            throw new ChartInputException(file, name, "missing");
        }

        if (element.ValueKind != JsonValueKind.String)
        {
            throw new ChartInputException(file, name, $"expected a string, found {Describe(element)}");
        }

        return element.GetString()!;
    }

    private static Dictionary<string, JsonElement>? ObjectMembers(string file, JsonElement root, string name, bool required)
    {
        if (!root.TryGetProperty(name, out var element))
        {
            return required ? throw new ChartInputException(file, name, "missing") : null;
        }

        if (element.ValueKind != JsonValueKind.Object)
        {
            throw new ChartInputException(file, name, $"expected an object, found {Describe(element)}");
        }

        var members = new Dictionary<string, JsonElement>(StringComparer.Ordinal);
        foreach (var property in element.EnumerateObject())
        {
            // Clone: the elements outlive the document, which is disposed after reading.
            members[property.Name] = property.Value.Clone();
        }

        return members;
    }

    // The machine block is informational: show what is there, fail only when it is not an object.
    private static string DescribeMachine(string file, JsonElement root)
    {
        if (!root.TryGetProperty("machine", out var machine))
        {
            return "an unrecorded machine";
        }

        if (machine.ValueKind != JsonValueKind.Object)
        {
            throw new ChartInputException(file, "machine", $"expected an object, found {Describe(machine)}");
        }

        var parts = new List<string>();
        foreach (var name in (ReadOnlySpan<string>)["os", "architecture", "processor_count", "dotnet", "configuration"])
        {
            if (!machine.TryGetProperty(name, out var value))
            {
                continue;
            }

            var text = value.ValueKind switch
            {
                JsonValueKind.String => value.GetString(),
                JsonValueKind.Number => value.GetRawText(),
                _ => throw new ChartInputException(file, $"machine.{name}", $"expected a string or number, found {Describe(value)}"),
            };
            parts.Add(name == "processor_count" ? $"{text} cores" : text!);
        }

        return parts.Count == 0 ? "an unrecorded machine" : string.Join(", ", parts);
    }

    private static string Describe(JsonElement element)
    {
        var raw = element.ValueKind switch
        {
            JsonValueKind.Object => "an object",
            JsonValueKind.Array => "an array",
            JsonValueKind.Null => "null",
            _ => element.GetRawText(),
        };
        if (raw.Length > 40)
        {
            raw = string.Concat(raw.AsSpan(0, 37), "...");
        }

        return element.ValueKind switch
        {
            JsonValueKind.String => $"the string {raw}",
            JsonValueKind.Number => string.Create(CultureInfo.InvariantCulture, $"the number {raw}"),
            JsonValueKind.True or JsonValueKind.False => $"the boolean {raw}",
            _ => raw,
        };
    }
}
