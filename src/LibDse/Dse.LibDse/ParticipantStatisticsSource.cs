using System.Diagnostics;

namespace Dse;

/// <summary>
/// A StateObject's statistics for its heartbeats (<see cref="ParticipantStatistics"/>): a barrier-wait histogram that
/// any thread records into, and the queues registered with it. Thread-safe.
/// </summary>
internal sealed class ParticipantStatisticsSource
{
    /// <summary>The bucket bounds of the barrier-wait histogram, in milliseconds.</summary>
    internal static readonly double[] BarrierWaitBounds = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000];

    // One count per bucket and one beyond the last bound; updated with Interlocked, read without a lock (a heartbeat's
    // copy may miss a wait that ends while it is taken, and counts it in the next one).
    private readonly long[] _barrierCounts = new long[BarrierWaitBounds.Length + 1];

    // The sum of all waits in Stopwatch ticks (Interlocked).
    private long _barrierTicks;

    // Guards _queues; registrations are rare, reads once per heartbeat.
    private readonly Lock _queuesLock = new();
    private readonly Dictionary<string, Registration> _queues = new(StringComparer.Ordinal);

    /// <summary>Counts a barrier wait that began at Stopwatch timestamp <paramref name="started"/> and ended now.</summary>
    public void RecordBarrierWait(long started)
    {
        long ticks = Stopwatch.GetTimestamp() - started;
        double milliseconds = ticks * 1000.0 / Stopwatch.Frequency;
        int bucket = Array.BinarySearch(BarrierWaitBounds, milliseconds);

        // A wait equal to a bound belongs to that bound's bucket; otherwise to the first bound above it.
        Interlocked.Increment(ref _barrierCounts[bucket >= 0 ? bucket : ~bucket]);
        Interlocked.Add(ref _barrierTicks, Math.Max(0, ticks));
    }

    /// <summary>Registers a queue whose depths are read at every heartbeat; dispose the result to unregister it.</summary>
    /// <exception cref="ArgumentException">The name is invalid or registered already, or <see cref="ParticipantStatistics.MaxQueues"/> are registered.</exception>
    public IDisposable RegisterQueue(string name, Func<QueueStatistics> read)
    {
        ArgumentNullException.ThrowIfNull(read);
        if (ParticipantStatistics.QueueNameProblem(name) is { } problem)
        {
            throw new ArgumentException($"A queue name {problem}", nameof(name));
        }

        lock (_queuesLock)
        {
            if (_queues.Count >= ParticipantStatistics.MaxQueues)
            {
                throw new ArgumentException($"{ParticipantStatistics.MaxQueues} queues are registered already; that is the most a participant reports.", nameof(name));
            }

            var registration = new Registration(this, name, read);
            if (!_queues.TryAdd(name, registration))
            {
                throw new ArgumentException($"A queue named '{name}' is registered already; names are unique per StateObject.", nameof(name));
            }

            return registration;
        }
    }

    /// <summary>The statistics to send now.</summary>
    /// <remarks>
    /// A queue whose reader throws, or returns something that breaks <see cref="QueueStatistics"/>' rules, is left out
    /// of this snapshot: statistics never cost a heartbeat, which keeps the participant a member.
    /// </remarks>
    public ParticipantStatistics Snapshot(long currentVersion, long worldLine)
    {
        var counts = new long[_barrierCounts.Length];
        for (int i = 0; i < counts.Length; i++)
        {
            counts[i] = Volatile.Read(ref _barrierCounts[i]);
        }

        double sum = Volatile.Read(ref _barrierTicks) * 1000.0 / Stopwatch.Frequency;
        var waits = new BarrierWaitDistribution(BarrierWaitBounds, counts, sum);

        Registration[] registrations;
        lock (_queuesLock)
        {
            registrations = [.. _queues.Values];
        }

        var queues = new List<QueueStatistics>(registrations.Length);
        foreach (var registration in registrations)
        {
            QueueStatistics? queue;
            try
            {
                queue = registration.Read();
            }
            catch (Exception ex) when (ex is not OutOfMemoryException)
            {
                continue;
            }

            if (queue is { Unconsumed: >= 0, InSpilled: >= 0, OutPending: >= 0 })
            {
                // The registered name is the one reported, so it stays valid and unique whatever the reader returns.
                queues.Add(queue with { Name = registration.Name });
            }
        }

        return new ParticipantStatistics(Math.Max(0, currentVersion), Math.Max(0, worldLine), waits, queues);
    }

    private void Unregister(Registration registration)
    {
        lock (_queuesLock)
        {
            // Only this registration's entry: the name may have been registered again after an earlier dispose.
            if (_queues.TryGetValue(registration.Name, out var current) && current == registration)
            {
                _queues.Remove(registration.Name);
            }
        }
    }

    private sealed class Registration(ParticipantStatisticsSource owner, string name, Func<QueueStatistics> read) : IDisposable
    {
        public string Name => name;

        public Func<QueueStatistics> Read => read;

        public void Dispose() => owner.Unregister(this);
    }
}
