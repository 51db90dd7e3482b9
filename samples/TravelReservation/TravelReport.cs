using System.Globalization;

namespace Dse.Samples.TravelReservation;

/// <summary>The result lines the sample prints: one per configuration as it ends, one per cluster checked, then the table and the violations.</summary>
public static class TravelReport
{
    /// <summary>Writes one configuration's line: trips, outcomes and latency.</summary>
    public static void WriteConfiguration(TextWriter writer, ConfigurationResult configuration)
    {
        ArgumentNullException.ThrowIfNull(writer);
        ArgumentNullException.ThrowIfNull(configuration);
        string mode = configuration.Speculative ? "spec   " : "nonspec";
        string unanswered = configuration.Unanswered > 0 ? string.Create(CultureInfo.InvariantCulture, $", {configuration.Unanswered} unanswered") : string.Empty;
        writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{mode} N={configuration.Services}: {configuration.Trips.Count} trips ({configuration.Confirmed} confirmed, {configuration.Failed} failed and compensated{unanswered}); confirmed latency mean {configuration.MeanMs:F1} ms, p95 {configuration.P95Ms:F1} ms"));
        var failures = configuration.Trips
            .Where(t => t.Outcome is not null && t.Outcome != TripRecord.Confirmed)
            .GroupBy(t => t.Outcome!, StringComparer.Ordinal)
            .OrderByDescending(g => g.Count())
            .Select(g => string.Create(CultureInfo.InvariantCulture, $"{g.Key} x{g.Count()}"))
            .ToArray();
        if (failures.Length > 0)
        {
            writer.WriteLine($"{new string(' ', mode.Length)}      {string.Join(", ", failures)}");
        }
    }

    /// <summary>Writes the table: one row per trip size, mean and p95 latency of each mode, and their ratio when both ran.</summary>
    public static void WriteTable(TextWriter writer, TravelResults results)
    {
        ArgumentNullException.ThrowIfNull(writer);
        ArgumentNullException.ThrowIfNull(results);
        writer.WriteLine();
        writer.WriteLine("confirmed trip latency (ms), by the number of services a trip books:");
        writer.WriteLine("  N    spec mean   spec p95   nonspec mean   nonspec p95   nonspec/spec mean");
        foreach (int n in results.Options.Services)
        {
            var speculative = results.Speculative?.Configurations.FirstOrDefault(c => c.Services == n);
            var nonSpeculative = results.NonSpeculative?.Configurations.FirstOrDefault(c => c.Services == n);
            string ratio = speculative is not null && nonSpeculative is not null && speculative.MeanMs > 0
                ? string.Create(CultureInfo.InvariantCulture, $"{nonSpeculative.MeanMs / speculative.MeanMs:F2}x")
                : "-";
            writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"  {n,-4}{Cell(speculative?.MeanMs),10}{Cell(speculative?.P95Ms),11}{Cell(nonSpeculative?.MeanMs),15}{Cell(nonSpeculative?.P95Ms),14}{ratio,20}"));
        }

        writer.WriteLine();
    }

    /// <summary>Writes a cluster's check line: trips checked, kills, violations.</summary>
    public static void WriteCheck(TextWriter writer, ModeResult mode)
    {
        ArgumentNullException.ThrowIfNull(writer);
        ArgumentNullException.ThrowIfNull(mode);
        writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{mode.Name}: checked {mode.CheckedTrips} trips against every store; kills {mode.Kills}; violations {mode.Violations.Count}"));
    }

    private static string Cell(double? ms) => ms is { } value && double.IsFinite(value) ? value.ToString("F1", CultureInfo.InvariantCulture) : "-";
}
