using System.Globalization;
using System.Text;

namespace Dse.Charts.Tests;

/// <summary>A temporary results folder and output folder, filled with synthetic harness JSON; deleted on dispose.</summary>
internal sealed class ResultsFolder : IDisposable
{
    private const string Machine = """
        "machine": { "processor_count": 2, "os": "Debian GNU/Linux 12 (bookworm)", "architecture": "X64", "dotnet": ".NET 10.0.12", "configuration": "Release" }
        """;

    public ResultsFolder()
    {
        Root = Path.Combine(Path.GetTempPath(), "dse-charts-" + Guid.NewGuid().ToString("N"));
        Results = Path.Combine(Root, "results");
        Output = Path.Combine(Root, "out");
        Directory.CreateDirectory(Results);
    }

    public string Root { get; }

    public string Results { get; }

    public string Output { get; }

    public string Write(string fileName, string json)
    {
        var path = Path.Combine(Results, fileName);
        File.WriteAllText(path, json);
        return path;
    }

    /// <summary>A 2PC result with <paramref name="transactions"/> seeded samples per mode, or none when zero.</summary>
    public string WriteTwoPc(int transactions, int seed = 42)
    {
        var samples = string.Empty;
        if (transactions > 0)
        {
            var random = new Random(seed);
            var spec = new StringBuilder();
            var nonspec = new StringBuilder();
            for (var i = 0; i < transactions; i++)
            {
                var separator = i == 0 ? "" : ",";
                // Speculative commits return before the log flush; non-speculative ones wait for 1-3 group commits.
                spec.Append(CultureInfo.InvariantCulture, $"{separator}{0.2 + random.NextDouble() * 1.5:0.###}");
                nonspec.Append(CultureInfo.InvariantCulture, $"{separator}{random.Next(1, 4) * 10 - random.NextDouble() * 10 + 0.3:0.###}");
            }

            samples = $$""", "samples": { "spec_commit_ms": [{{spec}}], "nonspec_commit_ms": [{{nonspec}}] }""";
        }

        return Write("2pc.json", $$"""
            { "scenario": "2pc", "timestamp_utc": "2026-11-23T05:00:00Z", "quick": true, "elapsed_s": 3.2, {{Machine}},
              "results": { "spec_mean_ms": 0.95, "nonspec_mean_ms": 15.3, "ratio": 0.062, "spec_p50_ms": 0.9, "spec_p99_ms": 1.7,
                           "nonspec_p50_ms": 14.8, "nonspec_p99_ms": 29.7, "transactions": {{transactions}}, "group_commit_ms": 10 }{{samples}} }
            """);
    }

    public string WriteInterceptor(string manualOps = "39800") => Write("interceptor.json", $$"""
        { "scenario": "interceptor", "timestamp_utc": "2026-11-23T05:10:00Z", "quick": false, "elapsed_s": 20.1, {{Machine}},
          "results": { "nodse_ops": 41234, "manual_ops": {{manualOps}}, "manual_metadata_ops": 36900, "interceptor_ops": 34100, "manual_ratio": 0.965, "interceptor_ratio": 0.827 } }
        """);

    public string WriteDarqReflect(string specP50At5 = "10.6") => Write("darq-reflect.json", $$"""
        { "scenario": "darq-reflect", "timestamp_utc": "2026-11-23T07:44:05Z", "quick": false, "elapsed_s": 64.3, {{Machine}},
          "results": { "spec_p50_ms_1hop": 10.3, "spec_p99_ms_1hop": 25.7, "nonspec_p50_ms_1hop": 10.4, "nonspec_p99_ms_1hop": 81.2,
            "spec_p50_ms_2hop": 10.4, "spec_p99_ms_2hop": 49.1, "nonspec_p50_ms_2hop": 30.3, "nonspec_p99_ms_2hop": 91.2,
            "spec_p50_ms_3hop": 10.2, "spec_p99_ms_3hop": 15.0, "nonspec_p50_ms_3hop": 40.2, "nonspec_p99_ms_3hop": 60.1,
            "spec_p50_ms_4hop": 9.8, "spec_p99_ms_4hop": 14.7, "nonspec_p50_ms_4hop": 62.9, "nonspec_p99_ms_4hop": 135.4,
            "spec_p50_ms_5hop": {{specP50At5}}, "spec_p99_ms_5hop": 54.7, "nonspec_p50_ms_5hop": 90.6, "nonspec_p99_ms_5hop": 142.2,
            "commit_interval_ms": 10 } }
        """);

    public string WriteTravel(string specMeanAt5 = "16.1", bool sweep = true) => Write("travel.json", $$"""
        { "scenario": "travel", "timestamp_utc": "2026-11-28T13:40:00Z", "quick": false, "elapsed_s": 240.5, {{Machine}},
          "results": { "spec_mean_ms_s1": 10.8, "spec_p95_ms_s1": 13.2, "nonspec_mean_ms_s1": 20.2, "nonspec_p95_ms_s1": 26.8,
            "spec_mean_ms_s2": 12.5, "spec_p95_ms_s2": 18.8, "nonspec_mean_ms_s2": 30.6, "nonspec_p95_ms_s2": 48.7,
            "spec_mean_ms_s3": 14.4, "spec_p95_ms_s3": 18.5, "nonspec_mean_ms_s3": 34.4, "nonspec_p95_ms_s3": 52.3,
            "spec_mean_ms_s4": 13.7, "spec_p95_ms_s4": 19.5, "nonspec_mean_ms_s4": 45.2, "nonspec_p95_ms_s4": 59.7,
            "spec_mean_ms_s5": {{specMeanAt5}}, "spec_p95_ms_s5": 19.6, "nonspec_mean_ms_s5": 65.3, "nonspec_p95_ms_s5": 71.1,
            "ratio_s5": 0.25, "spec_flatness": 1.49, "max_rate_spec": 700, "max_rate_nonspec": 400, "sweep_services": 3 }
          {{(sweep ? SweepSamples : string.Empty)}} }
        """);

    private const string SweepSamples = """
        , "samples": { "spec_sweep_rates": [10, 100, 700, 1000], "spec_sweep_p50_ms": [11, 12, 18, 30],
          "nonspec_sweep_rates": [10, 100, 400], "nonspec_sweep_p50_ms": [34, 36, 70] }
        """;

    public void Dispose()
    {
        try
        {
            Directory.Delete(Root, recursive: true);
        }
        catch (IOException)
        {
            // Best effort: a leftover temp folder is harmless.
        }
    }
}
