using System.Collections.Concurrent;
using Dse.Services;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>
/// Where each transaction's start record lies in a participant's log, so a prepare need not scan. Entries may name
/// records a rollback removed since: a prepare checks that the record is still readable before voting yes.
/// </summary>
internal sealed class ParticipantIndex
{
    private readonly ConcurrentDictionary<long, long> _starts = new();
    private readonly TaskCompletionSource _ready = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes once the index was rebuilt from the log after the participant connected.</summary>
    public Task Ready => _ready.Task;

    /// <summary>Records that <paramref name="transaction"/>'s start record is at <paramref name="lsn"/>.</summary>
    public void AddStart(long transaction, long lsn) => _starts[transaction] = lsn;

    /// <summary>The LSN of <paramref name="transaction"/>'s start record, if one was appended.</summary>
    public bool TryGetStart(long transaction, out long lsn) => _starts.TryGetValue(transaction, out lsn);

    /// <summary>Rebuilds the index from the surviving records of <paramref name="log"/> (connected, not yet serving).</summary>
    public async Task RebuildAsync(SpeculativeLog log, CancellationToken cancellationToken)
    {
        await log.StartLocalActionAsync(cancellationToken);
        try
        {
            await TransactionLog.ForEachAsync(log, (lsn, record) =>
            {
                if (record.Kind == RecordKind.Start)
                {
                    _starts[record.Transaction] = lsn;
                }
            }, cancellationToken);
        }
        finally
        {
            log.EndAction();
        }

        _ready.TrySetResult();
    }
}
