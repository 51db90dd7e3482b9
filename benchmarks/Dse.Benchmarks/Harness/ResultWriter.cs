using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.Json;

namespace Dse.Benchmarks.Harness;

/// <summary>Formats the RESULT line and writes <c>benchmarks/results/&lt;scenario&gt;.json</c> under the repository root.</summary>
public static class ResultWriter
{
    /// <summary>The file that marks the repository root.</summary>
    public const string RootMarker = "Dse.sln";

    /// <summary><c>RESULT name key=value ...</c>, invariant culture.</summary>
    public static string FormatLine(string scenario, ScenarioResults results)
    {
        ArgumentNullException.ThrowIfNull(results);
        var line = new StringBuilder("RESULT ").Append(scenario);
        foreach (var e in results.Entries)
        {
            line.Append(' ').Append(e.Key).Append('=').Append(e.FormattedValue);
        }

        return line.ToString();
    }

    /// <summary>Writes the JSON record of a run and returns its path; creates the results folder if missing.</summary>
    /// <exception cref="DirectoryNotFoundException">No folder above the executable or the working directory holds Dse.sln.</exception>
    public static string WriteJson(string scenario, bool quick, DateTime startedUtc, TimeSpan elapsed, ScenarioResults results)
    {
        ArgumentNullException.ThrowIfNull(results);
        string folder = Path.Combine(FindRepoRoot(), "benchmarks", "results");
        Directory.CreateDirectory(folder);
        string path = Path.Combine(folder, scenario + ".json");

        using var stream = new MemoryStream();
        using (var json = new Utf8JsonWriter(stream, new JsonWriterOptions { Indented = true }))
        {
            json.WriteStartObject();
            json.WriteString("scenario", scenario);
            json.WriteString("timestamp_utc", startedUtc.ToString("yyyy-MM-dd'T'HH:mm:ss'Z'", CultureInfo.InvariantCulture));
            json.WriteBoolean("quick", quick);
            json.WriteNumber("elapsed_s", Math.Round(elapsed.TotalSeconds, 2));
            json.WriteStartObject("machine");
            json.WriteNumber("processor_count", Environment.ProcessorCount);
            json.WriteString("os", RuntimeInformation.OSDescription);
            json.WriteString("architecture", RuntimeInformation.ProcessArchitecture.ToString());
            json.WriteString("dotnet", RuntimeInformation.FrameworkDescription);
#if DEBUG
            json.WriteString("configuration", "Debug");
#else
            json.WriteString("configuration", "Release");
#endif
            json.WriteEndObject();
            json.WriteStartObject("results");
            foreach (var e in results.Entries)
            {
                json.WriteNumber(e.Key, e.Value);
            }

            json.WriteEndObject();
            if (results.Samples.Count > 0)
            {
                json.WriteStartObject("samples");
                foreach (var (key, values) in results.Samples)
                {
                    json.WriteStartArray(key);
                    foreach (double v in values)
                    {
                        json.WriteNumberValue(Math.Round(v, 3));
                    }

                    json.WriteEndArray();
                }

                json.WriteEndObject();
            }

            json.WriteEndObject();
        }

        stream.WriteByte((byte)'\n');
        File.WriteAllBytes(path, stream.ToArray());
        return path;
    }

    /// <summary>The closest folder holding Dse.sln above the executable, else above the working directory.</summary>
    public static string FindRepoRoot() =>
        FindUp(AppContext.BaseDirectory) ?? FindUp(Environment.CurrentDirectory)
        ?? throw new DirectoryNotFoundException($"No {RootMarker} above {AppContext.BaseDirectory} or {Environment.CurrentDirectory}; run the harness from inside the repository.");

    private static string? FindUp(string start)
    {
        for (var dir = new DirectoryInfo(start); dir is not null; dir = dir.Parent)
        {
            if (File.Exists(Path.Combine(dir.FullName, RootMarker)))
            {
                return dir.FullName;
            }
        }

        return null;
    }
}
