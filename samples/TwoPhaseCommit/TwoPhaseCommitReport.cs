using System.Globalization;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>The result lines the sample prints: two or more per mode, as each mode ends, then the comparison.</summary>
public static class TwoPhaseCommitReport
{
    /// <summary>Writes one mode's latency line, its atomicity line, why transactions did not commit, and any violation.</summary>
    public static void WriteMode(TextWriter writer, ModeResults mode)
    {
        ArgumentNullException.ThrowIfNull(writer);
        ArgumentNullException.ThrowIfNull(mode);
        string name = mode.Speculative ? "speculative    " : "non-speculative";
        string indent = new(' ', name.Length);
        writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{name}: commit latency mean {mode.MeanMs:F2} ms, p50 {mode.P50Ms:F2} ms, p99 {mode.P99Ms:F2} ms; committed {mode.Committed}, aborted {mode.Aborted}, failed {mode.Failed} in {mode.Elapsed.TotalSeconds:F1} s ({mode.Committed / mode.Elapsed.TotalSeconds:F0} commits/s)"));
        writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"{indent}  atomicity: {mode.CheckedTransactions} transactions checked at 4 participants; kills {mode.Kills}, committed after the restart {(mode.Kills > 0 ? mode.CommittedAfterRestart.ToString(CultureInfo.InvariantCulture) : "-")}, violations {mode.Violations.Count}"));
        if (mode.NotCommittedReasons.Count > 0)
        {
            writer.WriteLine($"{indent}  not committed: {string.Join(", ", mode.NotCommittedReasons.OrderByDescending(r => r.Value).Select(r => string.Create(CultureInfo.InvariantCulture, $"{r.Key} x{r.Value}")))}");
        }

        if (mode.ForgedHeaders.Count > 0)
        {
            var byKind = mode.ForgedHeaders.GroupBy(f => f.Kind).Select(g => $"{g.Key} {string.Join("/", g.Select(f => f.Actual).Distinct())}");
            writer.WriteLine($"{indent}  forged headers: {mode.ForgedHeaders.Count(f => f.AsExpected)} of {mode.ForgedHeaders.Count} answered as expected ({string.Join(", ", byKind)})");
        }

        foreach (var forged in mode.ForgedHeaders.Where(f => !f.AsExpected))
        {
            writer.WriteLine($"  FORGED HEADER: {forged.Kind} to participant-{forged.Participant} got {forged.Actual}, expected {forged.Expected}");
        }

        foreach (string violation in mode.Violations)
        {
            writer.WriteLine($"  VIOLATION: {violation}");
        }
    }

    /// <summary>Writes the speculative / non-speculative comparison line when both modes ran; nothing otherwise.</summary>
    public static void WriteComparison(TextWriter writer, TwoPhaseCommitResults results)
    {
        ArgumentNullException.ThrowIfNull(writer);
        ArgumentNullException.ThrowIfNull(results);
        if (results is { Speculative: { } speculative, NonSpeculative: { } nonSpeculative } && double.IsFinite(results.Ratio))
        {
            writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"speculative / non-speculative mean commit latency: {results.Ratio:F2} (saves {nonSpeculative.MeanMs - speculative.MeanMs:F2} ms per transaction)"));
        }
    }
}
