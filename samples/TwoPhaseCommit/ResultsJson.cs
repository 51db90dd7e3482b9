using System.Runtime.InteropServices;
using System.Text.Json;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// Writes a run's results in the shape charts/ reads (<c>2pc.json</c>): <c>scenario</c>, <c>timestamp_utc</c>,
/// <c>machine</c>, <c>results</c> (numbers) and <c>samples</c> (per-transaction commit latency of each mode, in ms).
/// </summary>
public static class ResultsJson
{
    /// <summary>The scenario name the charts expect.</summary>
    public const string Scenario = "2pc";

    /// <summary>The summary numbers, keyed as the charts and the benchmark harness name them; absent modes are left out.</summary>
    public static IReadOnlyList<KeyValuePair<string, double>> Summary(TwoPhaseCommitResults results)
    {
        ArgumentNullException.ThrowIfNull(results);
        var entries = new List<KeyValuePair<string, double>>();
        void Add(string key, double value)
        {
            if (double.IsFinite(value))
            {
                entries.Add(new(key, value));
            }
        }

        Add("spec_mean_ms", results.Speculative?.MeanMs ?? double.NaN);
        Add("nonspec_mean_ms", results.NonSpeculative?.MeanMs ?? double.NaN);
        Add("ratio", results.Ratio);
        Add("spec_p50_ms", results.Speculative?.P50Ms ?? double.NaN);
        Add("spec_p99_ms", results.Speculative?.P99Ms ?? double.NaN);
        Add("nonspec_p50_ms", results.NonSpeculative?.P50Ms ?? double.NaN);
        Add("nonspec_p99_ms", results.NonSpeculative?.P99Ms ?? double.NaN);
        Add("transactions", results.Options.Transactions);
        Add("clients", results.Options.Clients);
        Add("group_commit_ms", results.Options.GroupCommit.TotalMilliseconds);
        Add("spec_aborted", results.Speculative?.Aborted ?? double.NaN);
        Add("nonspec_aborted", results.NonSpeculative?.Aborted ?? double.NaN);
        Add("spec_failed", results.Speculative?.Failed ?? double.NaN);
        Add("nonspec_failed", results.NonSpeculative?.Failed ?? double.NaN);
        Add("kills", (results.Speculative?.Kills ?? 0) + (results.NonSpeculative?.Kills ?? 0));
        Add("violations", (results.Speculative?.Violations.Count ?? 0) + (results.NonSpeculative?.Violations.Count ?? 0));
        return entries;
    }

    /// <summary>Writes the results, with every commit latency sample, to <paramref name="path"/>.</summary>
    public static void Write(string path, TwoPhaseCommitResults results, DateTime startedUtc)
    {
        ArgumentNullException.ThrowIfNull(results);
        string? folder = Path.GetDirectoryName(Path.GetFullPath(path));
        if (folder is not null)
        {
            Directory.CreateDirectory(folder);
        }

        using var stream = File.Create(path);
        using var json = new Utf8JsonWriter(stream, new JsonWriterOptions { Indented = true });
        json.WriteStartObject();
        json.WriteString("scenario", Scenario);
        json.WriteString("timestamp_utc", startedUtc.ToUniversalTime().ToString("yyyy-MM-dd'T'HH:mm:ss'Z'", System.Globalization.CultureInfo.InvariantCulture));
        json.WriteBoolean("quick", false);
        json.WriteStartObject("machine");
        json.WriteNumber("processor_count", Environment.ProcessorCount);
        json.WriteString("os", RuntimeInformation.OSDescription);
        json.WriteString("architecture", RuntimeInformation.ProcessArchitecture.ToString());
        json.WriteString("dotnet", RuntimeInformation.FrameworkDescription);
        json.WriteEndObject();
        json.WriteStartObject("results");
        foreach (var (key, value) in Summary(results))
        {
            json.WriteNumber(key, Math.Round(value, 4));
        }

        json.WriteEndObject();
        json.WriteStartObject("samples");
        WriteSamples(json, "spec_commit_ms", results.Speculative);
        WriteSamples(json, "nonspec_commit_ms", results.NonSpeculative);
        json.WriteEndObject();
        json.WriteEndObject();
    }

    private static void WriteSamples(Utf8JsonWriter json, string key, ModeResults? mode)
    {
        if (mode is null)
        {
            return;
        }

        json.WriteStartArray(key);
        foreach (double sample in mode.CommitLatenciesMs)
        {
            json.WriteNumberValue(Math.Round(sample, 3));
        }

        json.WriteEndArray();
    }
}
