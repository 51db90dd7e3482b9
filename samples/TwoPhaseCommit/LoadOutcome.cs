using System.Collections.Concurrent;

namespace Dse.Samples.TwoPhaseCommit;

/// <summary>What the clients of one load saw; safe to record into from every client at once.</summary>
internal sealed class LoadOutcome
{
    private readonly ConcurrentQueue<(long Transaction, long BeganAt, double LatencyMs)> _committed = new();
    private int _aborted;
    private int _failed;

    /// <summary>Committed transactions in completion order: id, start timestamp (Stopwatch) and commit latency.</summary>
    public IReadOnlyCollection<(long Transaction, long BeganAt, double LatencyMs)> Committed => _committed;

    public int Aborted => Volatile.Read(ref _aborted);

    public int Failed => Volatile.Read(ref _failed);

    /// <summary>Wall-clock time of the whole load.</summary>
    public TimeSpan Elapsed { get; set; }

    public void Record(long transaction, TransactionResult result, long beganAt, double latencyMs)
    {
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
