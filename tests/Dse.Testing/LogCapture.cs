using Microsoft.Extensions.Logging;

namespace Dse.Testing;

/// <summary>
/// Records log events so that tests can assert on them and wait for them: synchronization by event, never by time.
/// Use it as a logger provider (<c>builder.Logging.AddProvider(capture)</c>, where the host's filters apply) or as the
/// <see cref="ILoggerFactory"/> handed to a component (every event at or above the minimum level is recorded).
/// </summary>
/// <remarks>
/// A host disposes the providers it was given; the capture keeps its entries and waiters through that, so a test can
/// still read what a stopped host logged.
/// </remarks>
public sealed class LogCapture : ILoggerProvider, ILoggerFactory
{
    private readonly Lock _lock = new();

    // Guarded by _lock: every entry in the order logged, and the waiters not yet satisfied (each has seen fewer matching
    // entries than it waits for).
    private readonly List<LogEntry> _entries = [];
    private readonly List<Waiter> _waiters = [];
    private readonly LogLevel _minimumLevel;

    /// <summary>Creates a capture that records events at <paramref name="minimumLevel"/> or above (every level by default).</summary>
    public LogCapture(LogLevel minimumLevel = LogLevel.Trace)
    {
        _minimumLevel = minimumLevel;
    }

    /// <summary>A snapshot of the entries recorded so far, oldest first.</summary>
    public IReadOnlyList<LogEntry> Entries
    {
        get
        {
            lock (_lock)
            {
                return [.. _entries];
            }
        }
    }

    /// <summary>Whether an event with this id was recorded.</summary>
    public bool Contains(int eventId) => Count(eventId) > 0;

    /// <summary>How many events with this id were recorded.</summary>
    public int Count(int eventId) => Count(entry => entry.EventId.Id == eventId);

    /// <summary>How many recorded events match.</summary>
    public int Count(Func<LogEntry, bool> match)
    {
        ArgumentNullException.ThrowIfNull(match);
        lock (_lock)
        {
            int count = 0;
            foreach (var entry in _entries)
            {
                if (match(entry))
                {
                    count++;
                }
            }

            return count;
        }
    }

    /// <summary>
    /// Completes with the first event (already recorded or still to come) with this id whose message contains
    /// <paramref name="text"/> (any message when it is null).
    /// </summary>
    public Task<LogEntry> WaitForAsync(int eventId, string? text = null, CancellationToken cancellationToken = default) =>
        WaitForAsync(entry => entry.EventId.Id == eventId && (text is null || entry.Message.Contains(text, StringComparison.Ordinal)), 1, cancellationToken);

    /// <summary>Completes with the <paramref name="count"/>-th event with this id, counting those already recorded.</summary>
    public Task<LogEntry> WaitForCountAsync(int eventId, int count, CancellationToken cancellationToken = default) =>
        WaitForAsync(entry => entry.EventId.Id == eventId, count, cancellationToken);

    /// <summary>Completes with the <paramref name="count"/>-th event that matches, counting those already recorded.</summary>
    public Task<LogEntry> WaitForAsync(Func<LogEntry, bool> match, int count = 1, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(match);
        ArgumentOutOfRangeException.ThrowIfLessThan(count, 1);
        lock (_lock)
        {
            int seen = 0;
            foreach (var entry in _entries)
            {
                if (match(entry) && ++seen == count)
                {
                    return Task.FromResult(entry);
                }
            }

            var waiter = new Waiter(match, count, seen);
            _waiters.Add(waiter);

            // Registered under the lock so that Add never reads a half-written registration. Lock is reentrant: a token
            // cancelled already runs the callback inline, on this thread.
            waiter.Registration = cancellationToken.Register(() =>
            {
                lock (_lock)
                {
                    _waiters.Remove(waiter);
                }

                waiter.Done.TrySetCanceled(cancellationToken);
            });
            return waiter.Done.Task;
        }
    }

    public ILogger CreateLogger(string categoryName) => new CategoryLogger(this, categoryName);

    /// <summary>Not supported: the capture is the only sink of the loggers it creates.</summary>
    public void AddProvider(ILoggerProvider provider) =>
        throw new NotSupportedException($"{nameof(LogCapture)} records events itself; it does not forward them to other providers.");

    /// <summary>Nothing to release; entries stay readable (a host disposes its providers when it stops).</summary>
    public void Dispose()
    {
    }

    private bool IsEnabled(LogLevel level) => level != LogLevel.None && level >= _minimumLevel;

    private void Add(LogEntry entry)
    {
        lock (_lock)
        {
            _entries.Add(entry);
            for (int i = _waiters.Count - 1; i >= 0; i--)
            {
                var waiter = _waiters[i];
                if (waiter.Match(entry) && ++waiter.Seen == waiter.Count)
                {
                    _waiters.RemoveAt(i);

                    // Unregister, not Dispose: Dispose waits for a callback running elsewhere, which needs this lock.
                    waiter.Registration.Unregister();
                    waiter.Done.TrySetResult(entry);
                }
            }
        }
    }

    /// <summary>A test waiting for the <see cref="Count"/>-th matching entry; <see cref="Seen"/> is guarded by the capture's lock.</summary>
    private sealed class Waiter(Func<LogEntry, bool> match, int count, int seen)
    {
        public Func<LogEntry, bool> Match { get; } = match;

        public int Count { get; } = count;

        public int Seen { get; set; } = seen;

        public TaskCompletionSource<LogEntry> Done { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public CancellationTokenRegistration Registration { get; set; }
    }

    private sealed class CategoryLogger(LogCapture capture, string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => capture.IsEnabled(logLevel);

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (capture.IsEnabled(logLevel))
            {
                capture.Add(new LogEntry(eventId, logLevel, category, formatter(state, exception), exception));
            }
        }
    }
}
