using System.Diagnostics;

namespace Dse.Functions.Engine;

/// <summary>
/// Cuts epochs: takes the requests that arrived, gives them consecutive TIDs and hands the record to every partition.
/// A record is cut when the partitions ask for the next epoch and either <see cref="EntityRuntimeOptions.EpochMaxTransactions"/>
/// requests wait or the oldest has waited <see cref="EntityRuntimeOptions.EpochInterval"/>; an epoch with rescheduled
/// transactions is cut at once, even empty. Pulling at the partitions' pace makes epochs grow with the load.
/// </summary>
internal sealed class Sequencer : ITransactionSubmitter, IDisposable
{
    private readonly object _lock = new();
    private readonly Queue<TransactionRequest> _pending = new();
    private readonly Queue<long> _arrivals = new();
    private readonly int _max;
    private readonly long _intervalTicks;
    private readonly TimeProvider _time;
    private readonly IEpochLog _log;
    private readonly Action<EpochRecord> _publish;
    private readonly Thread _deadlines;
    private long _nextTid = 1;
    private long _wanted;
    private bool _urgent;
    private bool _idle;
    private bool _stopped;

    public Sequencer(EntityRuntimeOptions options, IEpochLog log, Action<EpochRecord> publish)
    {
        _max = options.EpochMaxTransactions;
        _intervalTicks = (long)(options.EpochInterval.TotalSeconds * Stopwatch.Frequency);
        _time = options.Time;
        _log = log;
        _publish = publish;

        // A thread of its own watches the oldest request's deadline: a Monitor wait keeps a 1 ms interval to about
        // 1.1 ms, where a System.Threading.Timer fires several milliseconds late on Linux.
        _deadlines = new Thread(WatchDeadlines) { IsBackground = true, Name = "dse-functions-sequencer" };
        _deadlines.Start();
    }

    public long EpochsCut { get; private set; }

    public void Submit(TransactionRequest request)
    {
        EpochRecord? record;
        lock (_lock)
        {
            if (_stopped)
            {
                request.Fail(new ObjectDisposedException(nameof(EntityRuntime), "The entity runtime has stopped."));
                return;
            }

            _pending.Enqueue(request);
            _arrivals.Enqueue(Stopwatch.GetTimestamp());
            record = TryCut();
        }

        Publish(record);
    }

    /// <summary>The partitions are ready for <paramref name="epoch"/>; <paramref name="urgent"/> when it has rescheduled transactions.</summary>
    public void RequestEpoch(long epoch, bool urgent)
    {
        EpochRecord? record;
        lock (_lock)
        {
            _wanted = epoch;
            _urgent = urgent;
            record = TryCut();
        }

        Publish(record);
    }

    /// <summary>Stops taking requests; returns those never sequenced.</summary>
    public List<TransactionRequest> Stop()
    {
        lock (_lock)
        {
            _stopped = true;
            Monitor.PulseAll(_lock);
            var left = _pending.ToList();
            _pending.Clear();
            _arrivals.Clear();
            return left;
        }
    }

    public void Dispose()
    {
        lock (_lock)
        {
            _stopped = true;
            Monitor.PulseAll(_lock);
        }

        _deadlines.Join();
    }

    private void WatchDeadlines()
    {
        while (true)
        {
            EpochRecord? record = null;
            lock (_lock)
            {
                if (_stopped)
                {
                    return;
                }

                if (_wanted != 0 && _pending.Count > 0)
                {
                    long remaining = _arrivals.Peek() + _intervalTicks - Stopwatch.GetTimestamp();
                    if (remaining <= 0)
                    {
                        record = TryCut(deadlinePassed: true);
                    }
                    else
                    {
                        Monitor.Wait(_lock, (int)Math.Max(1, Math.Ceiling(remaining * 1000.0 / Stopwatch.Frequency)));
                    }
                }
                else
                {
                    _idle = true;
                    Monitor.Wait(_lock);
                    _idle = false;
                }
            }

            Publish(record);
        }
    }

    // Under the lock.
    private EpochRecord? TryCut(bool deadlinePassed = false)
    {
        if (_wanted == 0 || _stopped)
        {
            return null;
        }

        bool cut = _pending.Count >= _max || (_urgent && _pending.Count == 0);
        if (!cut && _pending.Count > 0)
        {
            long waited = Stopwatch.GetTimestamp() - _arrivals.Peek();
            if (waited >= _intervalTicks || _urgent || deadlinePassed)
            {
                cut = true;
            }
            else if (_idle)
            {
                // Wake the deadline watcher: it was waiting for a request or for the partitions.
                Monitor.Pulse(_lock);
            }
        }

        if (!cut)
        {
            return null;
        }

        int n = Math.Min(_max, _pending.Count);
        var requests = new TransactionRequest[n];
        for (int i = 0; i < n; i++)
        {
            requests[i] = _pending.Dequeue();
            _arrivals.Dequeue();
        }

        long epoch = _wanted;
        var record = new EpochRecord(epoch, _nextTid, _time.GetUtcNow(), SeedOf(epoch), requests);
        _nextTid += n;
        _wanted = 0;
        _urgent = false;
        EpochsCut++;
        _log.Append(record);
        return record;
    }

    private void Publish(EpochRecord? record)
    {
        if (record is not null)
        {
            _publish(record);
        }
    }

    private static ulong SeedOf(long epoch)
    {
        ulong z = (ulong)epoch + 0x9E3779B97F4A7C15UL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
        return z ^ (z >> 31);
    }
}
