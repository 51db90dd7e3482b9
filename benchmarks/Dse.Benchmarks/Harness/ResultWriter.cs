using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.Json;

namespace Dse.Benchmarks.Harness;

/// <summary>
/// Formats the RESULT line and writes <c>&lt;scenario&gt;.json</c> to the results folder: <c>benchmarks/results</c>
/// under the repository root unless <c>--results-dir</c> or <see cref="ResultsFolderVariable"/> names another.
/// </summary>
public static class ResultWriter
{
    /// <summary>The file that marks the repository root.</summary>
    public const string RootMarker = "Dse.sln";

    /// <summary>The environment variable that names the results folder when <c>--results-dir</c> is not given.</summary>
    public const string ResultsFolderVariable = "DSE_BENCH_RESULTS";

    /// <summary>What the JSON of a <c>--quick</c> run says about its numbers.</summary>
    public const string QuickNote = "--quick is a smoke run: it shows the scenario works; its numbers are not measurements";

    // Longest error text on a failed RESULT line; the rest is cut.
    private const int MaxErrorChars = 400;

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

    /// <summary>
    /// <c>RESULT name status=STATUS error="..."</c>, the line of a run that did not finish (<c>failed</c>, <c>cancelled</c>):
    /// the error on one line, double quotes turned into single ones, cut at 400 characters.
    /// </summary>
    public static string FormatFailureLine(string scenario, string status, string error)
    {
        ArgumentNullException.ThrowIfNull(error);
        var text = new StringBuilder(error.Length);
        foreach (char c in error)
        {
            text.Append(c switch
            {
                '"' => '\'',
                '\r' or '\n' or '\t' => ' ',
                _ => c,
            });
        }

        if (text.Length > MaxErrorChars)
        {
            text.Length = MaxErrorChars - 3;
            text.Append("...");
        }

        return $"RESULT {scenario} status={status} error=\"{text}\"";
    }

    /// <summary>
    /// The results folder: <paramref name="requested"/> (from <c>--results-dir</c>) if given, else the value of
    /// <see cref="ResultsFolderVariable"/> if set, else <c>benchmarks/results</c> under the repository root.
    /// </summary>
    /// <exception cref="DirectoryNotFoundException">The default is needed and no folder above the executable or the working directory holds Dse.sln.</exception>
    public static string ResultsFolder(string? requested)
    {
        if (!string.IsNullOrWhiteSpace(requested))
        {
            return Path.GetFullPath(requested);
        }

        string? fromEnvironment = Environment.GetEnvironmentVariable(ResultsFolderVariable);
        return string.IsNullOrWhiteSpace(fromEnvironment)
            ? Path.Combine(FindRepoRoot(), "benchmarks", "results")
            : Path.GetFullPath(fromEnvironment);
    }

    /// <summary>Writes the JSON record of a run to <paramref name="folder"/> and returns its path; creates the folder if missing.</summary>
    public static string WriteJson(string folder, string scenario, bool quick, DateTime startedUtc, TimeSpan elapsed, ScenarioResults results)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(folder);
        ArgumentNullException.ThrowIfNull(results);
        Directory.CreateDirectory(folder);
        string path = Path.Combine(folder, scenario + ".json");

        using var stream = new MemoryStream();
        using (var json = new Utf8JsonWriter(stream, new JsonWriterOptions { Indented = true }))
        {
            json.WriteStartObject();
            json.WriteString("scenario", scenario);
            json.WriteString("timestamp_utc", startedUtc.ToString("yyyy-MM-dd'T'HH:mm:ss'Z'", CultureInfo.InvariantCulture));
            json.WriteBoolean("quick", quick);
            if (quick)
            {
                json.WriteString("quick_note", QuickNote);
            }

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
