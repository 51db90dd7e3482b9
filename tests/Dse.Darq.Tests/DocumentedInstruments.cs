using Dse.Testing;

namespace Dse.Darq.Tests;

/// <summary>
/// The instruments docs/metrics.md lists (the rows of its tables whose first column is headed "instrument"), each with the
/// series OpenTelemetry's Prometheus exporter serves for it once it recorded: the name with underscores for dots, the unit
/// as a suffix (<c>_milliseconds</c> for <c>ms</c>; a unit in braces such as <c>{message}</c> and the unit <c>1</c> add
/// nothing), then <c>_total</c> on a counter and <c>_bucket</c> for one of a histogram's series; a gauge and an up-down
/// counter (a Prometheus gauge) add nothing more.
/// </summary>
internal static class DocumentedInstruments
{
    /// <summary>One documented instrument and the Prometheus series that shows it.</summary>
    public sealed record Instrument(string Name, string Kind, string Unit, string Series);

    /// <summary>Reads docs/metrics.md of this repository.</summary>
    public static List<Instrument> Read() =>
        Parse(File.ReadAllLines(Path.Combine(BuiltProgram.RepositoryRoot(), "docs", "metrics.md")));

    /// <summary>The instruments of the doc's instrument tables, in the doc's order.</summary>
    /// <exception cref="InvalidDataException">A row whose name is not backticked, or whose kind this reader does not know.</exception>
    public static List<Instrument> Parse(IEnumerable<string> lines)
    {
        var instruments = new List<Instrument>();
        bool inInstrumentTable = false;
        foreach (string line in lines)
        {
            if (!line.StartsWith('|'))
            {
                inInstrumentTable = false;
                continue;
            }

            string[] cells = line.Split('|');
            string first = cells[1].Trim();
            if (first == "instrument")
            {
                inInstrumentTable = true;
                continue;
            }

            if (!inInstrumentTable || first.StartsWith("---", StringComparison.Ordinal))
            {
                continue;
            }

            if (cells.Length < 5 || first.Length < 3 || first[0] != '`' || first[^1] != '`')
            {
                throw new InvalidDataException($"docs/metrics.md: an instrument row that does not start with a backticked name: {line}");
            }

            string name = first[1..^1];
            string kind = cells[2].Trim();
            string unit = cells[3].Trim().Trim('`');
            instruments.Add(new Instrument(name, kind, unit, Series(name, kind, unit)));
        }

        return instruments;
    }

    /// <summary>The series the exporter serves for an instrument (for a histogram, its <c>_bucket</c> series).</summary>
    public static string Series(string name, string kind, string unit)
    {
        string series = name.Replace('.', '_').Replace('-', '_');
        string suffix = UnitSuffix(unit);
        if (suffix.Length > 0 && !series.Contains(suffix, StringComparison.Ordinal))
        {
            series += "_" + suffix;
        }

        return kind switch
        {
            "counter" or "observable counter" => series + "_total",
            "histogram" => series + "_bucket",
            "gauge" or "observable gauge" or "up-down counter" or "observable up-down counter" => unit == "1" ? series + "_ratio" : series,
            _ => throw new InvalidDataException($"docs/metrics.md: instrument {name} has kind '{kind}', which has no known Prometheus type."),
        };
    }

    /// <summary>The exporter's suffix for a UCUM unit: annotations in braces dropped, abbreviations written out.</summary>
    private static string UnitSuffix(string unit)
    {
        string bare = unit.StartsWith('{') && unit.EndsWith('}') ? string.Empty : unit;
        return bare switch
        {
            "" or "1" => string.Empty,
            "ms" => "milliseconds",
            "us" => "microseconds",
            "ns" => "nanoseconds",
            "s" => "seconds",
            "By" => "bytes",
            _ => bare,
        };
    }
}
