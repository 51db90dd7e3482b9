using Dse.Services;
using Microsoft.Extensions.Logging;

namespace Dse.Workflows;

/// <summary>
/// Reads the whole workflow log back and sorts it into workflows: for each id its latest run's events, checked for
/// damage (checksums, a gap in the numbering, a run that does not begin with its start), and how it ended if it did.
/// </summary>
internal static class HistoryLoader
{
    private const int ScanBatch = 4096;

    /// <summary>One workflow as the log has it.</summary>
    /// <param name="Id">The workflow id.</param>
    /// <param name="Run">Its latest run.</param>
    /// <param name="Events">The latest run's events, in order (empty if damaged beyond the start).</param>
    /// <param name="Problem">What is wrong with the run's history, if anything.</param>
    public sealed record LoadedWorkflow(string Id, int Run, List<HistoryEvent> Events, string? Problem)
    {
        /// <summary>The run's terminal event, if it ended.</summary>
        public HistoryEvent? Terminal => Problem is null && Events.Count > 0 && Events[^1].IsTerminal ? Events[^1] : null;
    }

    /// <summary>
    /// Scans <paramref name="log"/> in actions. Returns null if the log was restored during the scan (the caller starts
    /// again); <paramref name="restoreCount"/> is the count the scan started from.
    /// </summary>
    public static async Task<(List<LoadedWorkflow> Workflows, int Events)?> LoadAsync(SpeculativeLog log, long restoreCount, ILogger logger, CancellationToken cancellationToken)
    {
        var byId = new Dictionary<string, (int Run, List<HistoryEvent> Events, List<string> Problems)>(StringComparer.Ordinal);
        long from = -1;
        int events = 0;
        while (true)
        {
            IReadOnlyList<SpeculativeLogEntry> batch;
            await log.StartLocalActionAsync(cancellationToken).ConfigureAwait(false);
            try
            {
                if (log.RestoreCount != restoreCount)
                {
                    return null;
                }

                if (from < 0)
                {
                    from = log.BeginLsn;
                }

                batch = from >= log.TailLsn ? [] : await log.ScanAsync(from, ScanBatch, cancellationToken).ConfigureAwait(false);
            }
            finally
            {
                log.EndAction();
            }

            foreach (var entry in batch)
            {
                from = entry.NextLsn;
                events++;
                var record = HistoryCodec.Decode(entry.Data.Span);
                if (record.WorkflowId is null)
                {
                    WorkflowLogMessages.LogUnattributedEntry(logger, entry.Lsn, record.Problem!);
                    continue;
                }

                if (!byId.TryGetValue(record.WorkflowId, out var workflow) || record.Run > workflow.Run)
                {
                    workflow = (record.Run, [], []);
                    byId[record.WorkflowId] = workflow;
                }
                else if (record.Run < workflow.Run)
                {
                    continue; // an earlier run, closed by continue-as-new
                }

                if (record.Event is null)
                {
                    workflow.Problems.Add($"history event {record.Index} (LSN {entry.Lsn}): {record.Problem}");
                }
                else
                {
                    workflow.Events.Add(record.Event);
                }
            }

            if (batch.Count < ScanBatch)
            {
                break;
            }
        }

        var workflows = new List<LoadedWorkflow>(byId.Count);
        foreach (var (id, (run, runEvents, problems)) in byId)
        {
            workflows.Add(new LoadedWorkflow(id, run, runEvents, Check(runEvents, problems)));
        }

        return (workflows, events);
    }

    private static string? Check(List<HistoryEvent> events, List<string> problems)
    {
        if (problems.Count > 0)
        {
            return string.Join("; ", problems);
        }

        for (int i = 0; i < events.Count; i++)
        {
            if (events[i].Index != i)
            {
                return $"history event {i} is missing (the next one found is {events[i].Index}); an entry that could not be read may have held it";
            }

            if (i > 0 && events[i - 1].IsTerminal)
            {
                return $"history event {i} follows the run's end";
            }
        }

        if (events.Count == 0 || events[0].Kind != HistoryEventKind.WorkflowStarted || events[0].Name is null)
        {
            return "the run does not begin with its start event";
        }

        if (events[^1].Kind == HistoryEventKind.ContinuedAsNew)
        {
            return "the run continued as new, but the new run's start is missing";
        }

        return null;
    }
}
