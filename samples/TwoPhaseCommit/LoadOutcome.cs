using System.Collections.Concurrent;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>What the clients of one load saw; safe to record into from every client at once.</summary>
internal sealed class LoadOutcome
{
    private readonly ConcurrentQueue<(long Transaction, long BeganAt, double LatencyMs)> _committed = new();
    private readonly ConcurrentDictionary<string, int> _reasons = new(StringComparer.Ordinal);
    private int _aborted;
    private int _failed;

    /// <summary>Committed transactions in completion order: id, start timestamp (Stopwatch) and commit latency.</summary>
    public IReadOnlyCollection<(long Transaction, long BeganAt, double LatencyMs)> Committed => _committed;

    public int Aborted => Volatile.Read(ref _aborted);

    public int Failed => Volatile.Read(ref _failed);

    /// <summary>Why transactions were not committed (the step and the status), with how many each.</summary>
    public IReadOnlyDictionary<string, int> Reasons => _reasons;

    /// <summary>Wall-clock time of the whole load.</summary>
    public TimeSpan Elapsed { get; set; }

    public void Record(long transaction, TransactionResult result, string? reason, long beganAt, double latencyMs)
    {
        if (reason is not null)
        {
            _reasons.AddOrUpdate(reason, 1, static (_, n) => n + 1);
        }

        switch (result)
        {
            case TransactionResult.Committed:
                _committed.Enqueue((transaction, beganAt, latencyMs));
                break;
            case TransactionResult.Aborted:
                Interlocked.Increment(ref _aborted);
                break;
            default:
                Interlocked.Increment(ref _failed);
                break;
        }
    }
}
