using Dse.Services;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>Reads every surviving 2PC record of a speculative log, in LSN order.</summary>
internal static class TransactionLog
{
    private const int Batch = 4096;

    /// <summary>Calls <paramref name="onRecord"/> for each record (call inside an action of <paramref name="log"/>).</summary>
    public static async Task ForEachAsync(SpeculativeLog log, Action<long, TransactionRecord> onRecord, CancellationToken cancellationToken)
    {
        long from = 0;
        while (true)
        {
            var entries = await log.ScanAsync(from, Batch, cancellationToken);
            foreach (var entry in entries)
            {
                onRecord(entry.Lsn, TransactionRecord.Read(entry.Data.Span));
            }

            if (entries.Count < Batch)
            {
                return;
            }

            from = entries[^1].NextLsn;
        }
    }
}
