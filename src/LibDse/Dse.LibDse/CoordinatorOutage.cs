using Microsoft.Extensions.Logging;

namespace Dse;

/// <summary>
/// How a <see cref="StateObject"/> paces its background calls while the coordinator does not answer: after a failed
/// call they back off from the group-commit period, doubling up to 1 s, until a call succeeds; the outage is logged as
/// a warning at most every 5 s, the repeats in between at debug. Thread-safe (lock-free).
/// </summary>
internal sealed class CoordinatorOutage(long objectId, DseOptions options, ILogger logger)
{
    private static readonly TimeSpan UnavailableLogInterval = TimeSpan.FromSeconds(5);
    private static readonly TimeSpan MaxOutageBackoff = TimeSpan.FromSeconds(1);

    // When the last warning was logged (a timestamp, 0: never).
    private long _lastUnavailableLog;

    // When background calls may try again (a timestamp, 0: no outage seen), and the failures in a row so far.
    private long _retryAt;
    private int _failures;

    /// <summary>Whether an outage was seen and its backoff has not passed yet (background retries wait).</summary>
    public bool InBackoff()
    {
        long retryAt = Volatile.Read(ref _retryAt);
        return retryAt != 0 && options.TimeProvider.GetTimestamp() < retryAt;
    }

    /// <summary>The coordinator answered: background calls go back to their normal pace.</summary>
    public void NoteReachable()
    {
        if (Volatile.Read(ref _retryAt) != 0)
        {
            Volatile.Write(ref _failures, 0);
            Volatile.Write(ref _retryAt, 0);
        }
    }

    /// <summary>Records a failed coordinator call and logs it; returns how long background calls wait before the next try.</summary>
    public TimeSpan RecordFailure(Exception exception)
    {
        var time = options.TimeProvider;
        int failures = Math.Min(Interlocked.Increment(ref _failures), 16);
        var delay = TimeSpan.FromTicks(Math.Min(options.GroupCommitPeriod.Ticks << Math.Min(failures - 1, 10), MaxOutageBackoff.Ticks));
        Volatile.Write(ref _retryAt, time.GetTimestamp() + Math.Max(1, (long)(delay.TotalSeconds * time.TimestampFrequency)));
        Log(exception);
        return delay;
    }

    private void Log(Exception exception)
    {
        var time = options.TimeProvider;
        long now = time.GetTimestamp();
        long last = Volatile.Read(ref _lastUnavailableLog);
        if (last != 0 && time.GetElapsedTime(last, now) < UnavailableLogInterval)
        {
            DseLogMessages.CoordinatorStillUnavailable(logger, objectId, exception.Message);
            return;
        }

        if (Interlocked.CompareExchange(ref _lastUnavailableLog, now, last) == last)
        {
            DseLogMessages.CoordinatorUnavailable(logger, objectId, exception);
        }
    }
}
